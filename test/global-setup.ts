import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Builds dist/ and the CLI's bundle once (npm run build), so tests that run the real `bin/pak2.js` test the current source. */
export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(root, 'scripts/bundle.mjs')], { stdio: 'inherit' });
}
