import { render } from 'ink-testing-library';
import React from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { SnapshotLoader } from '../../source/snapshot/index.js';
import { upsertThread } from '../../source/store/index.js';
import { Plants } from '../../source/ui/panes/plants.js';
import { plain } from '../ui/fixtures.js';
import { makeTestGarden } from '../support/garden.js';

let garden: Awaited<ReturnType<typeof makeTestGarden>> | undefined;
afterEach(() => garden?.cleanup());

describe('the workbench plants pane shows a plant\'s active threads', () => {
  it('renders the threads of a snapshot read from a real garden', async () => {
    garden = await makeTestGarden();
    await upsertThread(garden.paths, 'gardener', { id: 't-flaky', title: 'Flaky date test', status: 'blocked', summary: 'fails near midnight' });
    await upsertThread(garden.paths, 'gardener', { id: 't-docs', title: 'Docs pass', status: 'waiting' });
    const snapshot = await new SnapshotLoader(garden).load();
    const { lastFrame } = render(<Plants plants={snapshot.plants} cursor={0} width={70} height={16} focused />);
    const frame = plain(lastFrame()!);
    expect(frame).toContain('gardener (gardener) · 2 threads');
    expect(frame).toContain('Active threads (2)');
    expect(frame).toContain('• Flaky date test [blocked] — fails near midnight');
    expect(frame).toContain('• Docs pass [waiting]');
  });

  it('a malformed file shows no threads (the problem goes to the snapshot)', async () => {
    garden = await makeTestGarden();
    const { activeThreadsFile } = await import('../../source/store/index.js');
    const fs = await import('node:fs');
    fs.writeFileSync(activeThreadsFile(garden.paths, 'gardener'), '{"threads": "x"}');
    const snapshot = await new SnapshotLoader(garden).load();
    expect(snapshot.problems).toHaveLength(1);
    const frame = plain(render(<Plants plants={snapshot.plants} cursor={0} width={70} height={16} focused />).lastFrame()!);
    expect(frame).toContain('Active threads (0)');
    expect(frame).toContain('none');
  });
});
