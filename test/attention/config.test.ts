import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../source/garden/index.js';
import { validateConfig } from '../../source/contracts/index.js';

describe('[notify] (docs/attention/level2.md, "Notifications")', () => {
  it('reads terminal and command; absent, the workbench rings a bell and runs nothing', () => {
    expect(parseConfig('').notify).toBeUndefined();
    expect(parseConfig('[notify]\n').notify).toEqual({ terminal: 'bell' });
    for (const mode of ['bell', 'osc9', 'osc777', 'all', 'off']) expect(parseConfig(`[notify]\nterminal = "${mode}"\n`).notify?.terminal).toBe(mode);
    expect(parseConfig('[notify]\ncommand = ["notify-send", "pak2"]\n').notify).toEqual({ terminal: 'bell', command: ['notify-send', 'pak2'] });
    expect(validateConfig({ notify: { terminal: 'osc9', command: ['x'] } })).toEqual([]);
  });

  it('refuses every bad value in one line naming the key', () => {
    const refusal = (toml: string) => {
      try {
        parseConfig(toml);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    const cases: [string, RegExp][] = [
      ['[notify]\nterminal = "loud"\n', /^PAK2\.toml: notify\.terminal: INVALID_CONFIG_VALUE \(must be "bell", "osc9", "osc777", "all" or "off"; got "loud"\)$/],
      ['[notify]\nterminal = true\n', /^PAK2\.toml: notify\.terminal: INVALID_CONFIG_VALUE .*got true\)$/],
      ['[notify]\ncommand = "notify-send pak2"\n', /^PAK2\.toml: notify\.command: INVALID_CONFIG_VALUE \(must be an array of the executable and its arguments .*got "notify-send pak2"\)$/],
      ['[notify]\ncommand = []\n', /^PAK2\.toml: notify\.command: INVALID_CONFIG_VALUE/],
      ['[notify]\ncommand = ["notify-send", ""]\n', /^PAK2\.toml: notify\.command\.1: INVALID_CONFIG_VALUE/],
      ['[notify]\ncommand = [1]\n', /^PAK2\.toml: notify\.command\.0: INVALID_CONFIG_VALUE/],
      ['[notify]\nbell = true\n', /^PAK2\.toml: notify\.bell: UNKNOWN_CONFIG_KEY/],
      ['notify = "yes"\n', /^PAK2\.toml: notify: INVALID_CONFIG_VALUE/],
    ];
    for (const [toml, expected] of cases) {
      const message = refusal(toml);
      expect(message, toml).toMatch(expected);
      expect(message.split('\n')).toHaveLength(1);
    }
  });
});
