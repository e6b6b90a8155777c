import { useStdout } from 'ink';
import { useEffect, useState } from 'react';
/** Terminal columns and rows, updated on resize. Defaults (100 × 30) stand in where the stream has none. */
export function useTerminalSize(fallback = { columns: 100, rows: 30 }) {
    const { stdout } = useStdout();
    const read = () => ({ columns: stdout.columns || fallback.columns, rows: stdout.rows || fallback.rows });
    const [size, setSize] = useState(read);
    useEffect(() => {
        const onResize = () => setSize(read());
        stdout.on('resize', onResize);
        return () => {
            stdout.off('resize', onResize);
        };
        // eslint-disable-next-line react-hooks/exhaustive-deps
    }, [stdout]);
    return size;
}
//# sourceMappingURL=use-terminal-size.js.map