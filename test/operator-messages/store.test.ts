import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { validateOperatorMessage, type RunRecord } from '../../source/contracts/index.js';
import {
  closeRun,
  commissionPlant,
  createGoal,
  deliverOperatorMessage,
  emitOperatorMessage,
  listInbox,
  listOperatorMessages,
  listOperatorNotes,
  openRun,
  OperatorMessageError,
  operatorMessagesFile,
  operatorNotesDir,
  replyDir,
  StoreError,
  type OperatorMessageInput,
} from '../../source/store/index.js';
import { makeTestGarden } from '../support/garden.js';

type TestGarden = Awaited<ReturnType<typeof makeTestGarden>>;
const gardens: TestGarden[] = [];
afterEach(() => {
  for (const g of gardens.splice(0)) g.cleanup();
});

async function gardenWithRun(options: Parameters<typeof makeTestGarden>[0] = {}, plant = 'gardener'): Promise<{ garden: TestGarden; run: RunRecord }> {
  const garden = await makeTestGarden(options);
  gardens.push(garden);
  if (plant !== 'gardener') await commissionPlant(garden.paths, plant, 'gardener');
  const goal = await createGoal(garden.paths, { type: 'tend', plant, body: 'Survey the garden' });
  const run = await openRun(garden.paths, goal, { plant, driver: 'success', model: 'fake' });
  return { garden, run };
}

function survey(run: string, overrides: Partial<OperatorMessageInput> = {}): OperatorMessageInput {
  return {
    run,
    kind: 'tend_survey',
    title: 'Tend survey: one stale goal',
    body: 'I read the queue and the last runs.\n\nOne thing stands out.',
    findings: ['3-fix-login has waited 9 days', 'runs are otherwise healthy'],
    suggested_goals: [{ type: 'fix', body: 'Look at why 3-fix-login\nnever gets dispatched' }],
    ...overrides,
  };
}

/** Every file under `dir`, relative, sorted ([] when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(dir, f)).isFile()).sort();
}

async function refusal(promise: Promise<unknown>): Promise<OperatorMessageError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OperatorMessageError);
  return error as OperatorMessageError;
}

describe('emitOperatorMessage', () => {
  it('appends the run-local record and delivers an operator note, not a reply note', async () => {
    const { garden, run } = await gardenWithRun();
    const now = new Date('2026-01-02T03:04:05.000Z');
    const emitted = await emitOperatorMessage(garden, survey(run.id), now);

    const id = `om-${run.id}-1`;
    expect(emitted.message).toEqual({
      id,
      run: run.id,
      plant: 'gardener',
      kind: 'tend_survey',
      title: 'Tend survey: one stale goal',
      body: 'I read the queue and the last runs.\n\nOne thing stands out.',
      emitted_at: '2026-01-02T03:04:05.000Z',
      findings: ['3-fix-login has waited 9 days', 'runs are otherwise healthy'],
      suggested_goals: [{ type: 'fix', body: 'Look at why 3-fix-login\nnever gets dispatched' }],
    });
    expect(validateOperatorMessage(emitted.message)).toEqual([]);

    // run-local durable record: one JSON line
    const recordFile = path.join(garden.paths.runsDir, run.id, 'operator-messages.jsonl');
    expect(emitted.recordFile).toBe(recordFile);
    const lines = fs.readFileSync(recordFile, 'utf8').split('\n').filter(Boolean);
    expect(lines.map((l) => JSON.parse(l))).toEqual([emitted.message]);

    // delivered on the operator surface, inbox/<garden name>/operator/<id>.md
    const reply = replyDir(garden.paths, garden.config);
    expect(emitted.notePath).toBe(path.join(reply, 'operator', `${id}.md`));
    const note = fs.readFileSync(emitted.notePath, 'utf8');
    expect(note.split('\n')[0]).toBe('# Tend survey: one stale goal');
    expect(note).toContain(`_Tend survey from gardener, run ${run.id}, 2026-01-02T03:04:05.000Z (operator message ${id})._`);
    expect(note).toContain('One thing stands out.');
    expect(note).toContain('## Findings\n\n- 3-fix-login has waited 9 days\n- runs are otherwise healthy');
    expect(note).toContain('## Suggested goals\n\n- **fix**: Look at why 3-fix-login\n  never gets dispatched');

    // never a reply note: the reply directory's top level holds no file
    expect(fs.readdirSync(reply)).toEqual(['operator']);
    expect(await listInbox(garden.paths, garden.config)).toEqual([]);

    expect(await listOperatorMessages(garden.paths, run.id)).toEqual({ messages: [emitted.message], problems: [] });
    const notes = await listOperatorNotes(garden.paths, garden.config);
    expect(notes).toEqual([expect.objectContaining({ id, name: `${id}.md`, path: emitted.notePath, title: 'Tend survey: one stale goal' })]);
  });

  it('numbers messages within the run and only appends', async () => {
    const { garden, run } = await gardenWithRun();
    const first = await emitOperatorMessage(garden, survey(run.id));
    const before = fs.readFileSync(first.recordFile, 'utf8');
    const second = await emitOperatorMessage(garden, {
      run: run.id,
      kind: 'recently_concluded',
      title: 'Recently concluded: 2 goals',
      body: 'Both closed with success.',
      goals: ['3-fix-login', '5-write-docs'],
    });
    expect(second.message.id).toBe(`om-${run.id}-2`);
    const after = fs.readFileSync(first.recordFile, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    expect(after.split('\n').filter(Boolean)).toHaveLength(2);
    const note = fs.readFileSync(second.notePath, 'utf8');
    expect(note).toContain('_Recently concluded from gardener');
    expect(note).toContain('## Concluded goals\n\n- `3-fix-login`\n- `5-write-docs`');
    expect(note).not.toContain('## Findings');
    const { messages } = await listOperatorMessages(garden.paths, run.id);
    expect(messages.map((m) => m.id)).toEqual([`om-${run.id}-1`, `om-${run.id}-2`]);
    expect((await listOperatorNotes(garden.paths, garden.config)).map((n) => n.id).sort()).toEqual([`om-${run.id}-1`, `om-${run.id}-2`]);
  });

  it('renders a survey with no findings as nothing needing attention', async () => {
    const { garden, run } = await gardenWithRun();
    const { notePath } = await emitOperatorMessage(garden, survey(run.id, { findings: [], suggested_goals: undefined }));
    const note = fs.readFileSync(notePath, 'utf8');
    expect(note).toContain('## Findings\n\nNothing needs attention.');
    expect(note).not.toContain('## Suggested goals');
  });

  it('gives concurrent emitters distinct ids', async () => {
    const { garden, run } = await gardenWithRun();
    const all = await Promise.all(Array.from({ length: 6 }, (_, i) => emitOperatorMessage(garden, survey(run.id, { title: `survey ${i}` }))));
    expect(all.map((e) => e.message.id).sort()).toEqual([1, 2, 3, 4, 5, 6].map((n) => `om-${run.id}-${n}`).sort());
    expect(fs.readFileSync(operatorMessagesFile(garden.paths, run.id), 'utf8').split('\n').filter(Boolean)).toHaveLength(6);
    expect(filesUnder(operatorNotesDir(garden.paths, garden.config))).toHaveLength(6);
  });

  it('delivers under the configured [garden].name, and still lets a legacy inbox/garden/ be renamed', async () => {
    const { garden, run } = await gardenWithRun({ extraToml: '[garden]\nname = "orchard"' });
    fs.mkdirSync(path.join(garden.paths.inboxDir, 'garden'), { recursive: true });
    fs.writeFileSync(path.join(garden.paths.inboxDir, 'garden', 'old-reply.md'), '# Old reply\n');
    const { notePath } = await emitOperatorMessage(garden, survey(run.id));
    expect(notePath).toBe(path.join(garden.paths.inboxDir, 'orchard', 'operator', `om-${run.id}-1.md`));
    expect(fs.existsSync(path.join(garden.paths.inboxDir, 'orchard', 'old-reply.md'))).toBe(true);
    expect((await listInbox(garden.paths, garden.config)).map((n) => n.name)).toEqual(['old-reply.md']);
  });
});

describe('emitOperatorMessage refusals write nothing', () => {
  function expectNothingWritten(garden: TestGarden, runId: string): void {
    expect(filesUnder(path.join(garden.paths.runsDir, runId)).filter((f) => f !== 'meta.json')).toEqual([]);
    expect(filesUnder(garden.paths.inboxDir)).toEqual([]);
  }

  it('RUN_NOT_FOUND for an unknown run (exit-2 class)', async () => {
    const { garden } = await gardenWithRun();
    const error = await refusal(emitOperatorMessage(garden, survey('99-no-such-goal-r1')));
    expect(error).toMatchObject({ reason: 'RUN_NOT_FOUND', code: 'RUN_NOT_FOUND' });
    expect(error.message).toContain('99-no-such-goal-r1');
    expect(fs.existsSync(path.join(garden.paths.runsDir, '99-no-such-goal-r1'))).toBe(false);
    expect(filesUnder(garden.paths.inboxDir)).toEqual([]);
  });

  it('RUN_NOT_RUNNING for a closed run (a refused operation); its record set stays final', async () => {
    const { garden, run } = await gardenWithRun();
    const earlier = await emitOperatorMessage(garden, survey(run.id));
    await closeRun(garden.paths, run.id, 'tend', { status: 'success', cost: { source: 'unknown' }, reflection: 'Surveyed.' });
    const recordBefore = fs.readFileSync(earlier.recordFile, 'utf8');
    const inboxBefore = filesUnder(garden.paths.inboxDir);
    const error = await refusal(emitOperatorMessage(garden, survey(run.id)));
    expect(error).toMatchObject({ reason: 'RUN_NOT_RUNNING', code: 'INVALID_TRANSITION' });
    expect(error.message).toContain('the run is success');
    expect(fs.readFileSync(earlier.recordFile, 'utf8')).toBe(recordBefore);
    expect(filesUnder(garden.paths.inboxDir)).toEqual(inboxBefore);
  });

  it('RUN_NOT_RUNNING for a run that closed without emitting', async () => {
    const { garden, run } = await gardenWithRun();
    await closeRun(garden.paths, run.id, 'tend', { status: 'failure', cost: { source: 'unknown' }, failureReason: 'agent_error' });
    expect(await refusal(emitOperatorMessage(garden, survey(run.id)))).toMatchObject({ reason: 'RUN_NOT_RUNNING' });
    expectNothingWritten(garden, run.id);
  });

  it('NOT_GARDENER_RUN for a run of another plant', async () => {
    const { garden, run } = await gardenWithRun({}, 'helper');
    const error = await refusal(emitOperatorMessage(garden, survey(run.id)));
    expect(error).toMatchObject({ reason: 'NOT_GARDENER_RUN', code: 'INVALID_TRANSITION' });
    expect(error.message).toContain('plant helper');
    expectNothingWritten(garden, run.id);
  });

  it('INVALID_RECORD for a malformed message, with every issue', async () => {
    const { garden, run } = await gardenWithRun();
    const error = await refusal(
      emitOperatorMessage(garden, survey(run.id, { title: 'two\nlines', body: '', findings: undefined, goals: ['not a goal'] })),
    );
    expect(error).toMatchObject({ reason: 'INVALID_RECORD', code: 'INVALID_RECORD' });
    expect(error.issues.map((i) => `${i.field}:${i.code}`).sort()).toEqual(
      ['title:INVALID_TITLE', 'body:MISSING_REQUIRED_FIELD', 'goals.0:INVALID_GOAL_FORMAT', 'findings:MISSING_REQUIRED_FIELD', 'goals:KIND_FIELD_MISMATCH'].sort(),
    );
    expect(error.message).toMatch(/^operator message: title: INVALID_TITLE/);
    expectNothingWritten(garden, run.id);
  });

  it('INVALID_RECORD naming run for a malformed run id, and an unknown kind', async () => {
    const { garden, run } = await gardenWithRun();
    const badRun = await refusal(emitOperatorMessage(garden, survey('../../etc')));
    expect(badRun.issues).toEqual([{ code: 'INVALID_ID_FORMAT', field: 'run', message: expect.any(String) }]);
    const badKind = await refusal(emitOperatorMessage(garden, survey(run.id, { kind: 'chat' })));
    expect(badKind.issues).toEqual([{ code: 'INVALID_MESSAGE_KIND', field: 'kind', message: expect.any(String) }]);
    expectNothingWritten(garden, run.id);
  });
});

describe('readers and redelivery', () => {
  it('listOperatorMessages reports a malformed line and goes on; ids never repeat past it', async () => {
    const { garden, run } = await gardenWithRun();
    const first = await emitOperatorMessage(garden, survey(run.id));
    fs.appendFileSync(first.recordFile, '{"torn": \n{"id":"om-x"}\n');
    const second = await emitOperatorMessage(garden, survey(run.id));
    expect(second.message.id).toBe(`om-${run.id}-4`);
    const { messages, problems } = await listOperatorMessages(garden.paths, run.id);
    expect(messages.map((m) => m.id)).toEqual([`om-${run.id}-1`, `om-${run.id}-4`]);
    expect(problems).toEqual([
      expect.objectContaining({ line: 2, message: expect.stringContaining('malformed JSON') }),
      expect.objectContaining({ line: 3, message: expect.stringContaining('id: INVALID_ID_FORMAT') }),
    ]);
  });

  it('listOperatorMessages is empty for a run that emitted nothing and refuses a malformed run id', async () => {
    const { garden, run } = await gardenWithRun();
    expect(await listOperatorMessages(garden.paths, run.id)).toEqual({ messages: [], problems: [] });
    await expect(listOperatorMessages(garden.paths, '../x')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect(await listOperatorNotes(garden.paths, garden.config)).toEqual([]);
  });

  it('a failed delivery keeps the record and says so; deliverOperatorMessage redelivers', async () => {
    const { garden, run } = await gardenWithRun();
    const reply = replyDir(garden.paths, garden.config);
    fs.mkdirSync(reply, { recursive: true });
    fs.writeFileSync(path.join(reply, 'operator'), 'in the way');
    const error = await emitOperatorMessage(garden, survey(run.id)).then(
      () => undefined,
      (e: unknown) => e as StoreError,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ code: 'IO_ERROR' });
    expect(error!.message).toContain('the record stands');
    const { messages } = await listOperatorMessages(garden.paths, run.id);
    expect(messages).toHaveLength(1);
    fs.rmSync(path.join(reply, 'operator'));
    const note = await deliverOperatorMessage(garden, messages[0]!);
    expect(fs.readFileSync(note, 'utf8')).toContain('# Tend survey: one stale goal');
  });
});
