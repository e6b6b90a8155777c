/**
 * Builders of valid records for the contract tests. Each returns a fresh
 * object; tests derive an invalid record by overriding or dropping fields.
 */

/** A fixed instant, ISO 8601 UTC. */
export const T0 = '2024-05-01T12:00:00.000Z';
export const T1 = '2024-05-01T12:05:00.000Z';

/** A copy of `record` without `key`. */
export function without<T extends Record<string, unknown>>(record: T, ...keys: string[]): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...record };
  for (const key of keys) delete copy[key];
  return copy;
}

/** A valid `running` run record. */
export function runningRun(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '42-fix-the-thing-r1',
    goal: '42-fix-the-thing',
    plant: 'gardener',
    status: 'running',
    started_at: T0,
    driver: 'codex',
    model: 'gpt-5.4',
    ...overrides,
  };
}

/** A valid terminal run record of `status` (failed statuses get a matching failure_reason). */
export function terminalRun(status = 'success', overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const failureReason: Record<string, string> = {
    failure: 'agent_error',
    killed: 'killed',
    timeout: 'timeout',
    zero_output: 'zero_output',
    abandoned: 'lease_expired',
  };
  return runningRun({
    status,
    completed_at: T1,
    cost: { source: 'provider', usd: 0.25, input_tokens: 1200, output_tokens: 300 },
    ...(failureReason[status] ? { failure_reason: failureReason[status] } : {}),
    ...(status === 'success' ? { reflection: 'Learned that the tests need a fresh fixture per case.' } : {}),
    ...overrides,
  });
}

/** A valid queued goal record. */
export function goalRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '7-add-a-readme',
    type: 'build',
    status: 'queued',
    priority: 50,
    body: 'Add a README',
    submitted_at: T0,
    ...overrides,
  };
}

/** A valid coordinator event. */
export function eventRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ts: T0, type: 'GoalSubmitted', goal: '7-add-a-readme', ...overrides };
}

/** A valid active plant record. */
export function plantRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'gardener', seed: 'gardener', status: 'active', commissioned_at: T0, ...overrides };
}

/**
 * JSON-like values no validator may throw on: scalars, empty and odd
 * containers, deep nesting, huge strings, prototype-looking keys.
 */
export function weirdInputs(): Array<[string, unknown]> {
  let deepObject: Record<string, unknown> = {};
  const deepRoot = deepObject;
  for (let i = 0; i < 5000; i += 1) {
    const next: Record<string, unknown> = {};
    deepObject.a = next;
    deepObject = next;
  }
  let deepArray: unknown[] = [];
  const deepArrayRoot = deepArray;
  for (let i = 0; i < 5000; i += 1) {
    const next: unknown[] = [];
    deepArray.push(next);
    deepArray = next;
  }
  const huge = 'x'.repeat(2_000_000);
  const hugeRecord = Object.fromEntries(
    ['id', 'goal', 'plant', 'status', 'started_at', 'completed_at', 'driver', 'model', 'type', 'ts', 'name', 'seed', 'body', 'submitted_at'].map((k) => [k, huge]),
  );
  const junk = [null, true, false, 0, -0, -1, 1.5, 1e308, '', ' ', huge, [], {}, [null], { '': '' }];
  const allFieldsJunk = junk.map((value, i): [string, unknown] => [
    `every known field = junk #${i}`,
    Object.fromEntries(
      ['id', 'goal', 'plant', 'status', 'started_at', 'completed_at', 'driver', 'model', 'cost', 'failure_reason', 'reflection', 'outputs', 'num_turns', 'worktree_baseline', 'type', 'priority', 'assigned_to', 'body', 'submitted_at', 'closed_reason', 'ts', 'name', 'seed', 'runtime', 'garden', 'defaults', 'coordinator', 'drivers'].map((k) => [k, value]),
    ),
  ]);
  return [
    ['undefined', undefined],
    ['null', null],
    ['true', true],
    ['zero', 0],
    ['NaN-free big number', 1e308],
    ['empty string', ''],
    ['huge string', huge],
    ['empty array', []],
    ['array of objects', [{ id: '1-a-r1' }, { status: 'success' }]],
    ['empty object', {}],
    ['object of nulls', { id: null, goal: null, status: null, cost: null }],
    ['deeply nested object', deepRoot],
    ['deeply nested object in a field', { id: '1-a-r1', cost: deepRoot, outputs: deepRoot, coordinator: deepRoot, drivers: deepRoot }],
    ['deeply nested array', deepArrayRoot],
    ['deeply nested array in a field', { status: deepArrayRoot, cost: deepArrayRoot, drivers: { x: { command: deepArrayRoot } } }],
    ['huge strings everywhere', hugeRecord],
    ['prototype-looking keys', JSON.parse('{"__proto__": {"status": "success"}, "constructor": 1, "toString": "x", "hasOwnProperty": null}')],
    ['null-prototype object', Object.assign(Object.create(null) as object, { id: '1-a-r1', status: 'success' })],
    ['cost of the wrong shape', { ...runningRun(), status: 'success', completed_at: T1, cost: ['provider'] }],
    ['terminal run with everything wrong', { id: 5, goal: [], plant: {}, status: 'success', started_at: 0, driver: null, model: false, cost: 'free', failure_reason: 7 }],
    ['unicode soup', { id: '１-ａ-r１', plant: 'ǵardener', status: 'súccess', started_at: '２０２４-01-01T00:00:00Z', body: '\u0000\uffff\ud800' }],
    ...allFieldsJunk,
  ];
}
