/**
 * A runner warns when its token would cross the network in the clear
 * (issue 25, item 3): plain http to a host that is not this machine. The
 * decision only (no connection is made: tests use loopback addresses only).
 */
import { describe, expect, it } from 'vitest';
import { plainHttpWarning } from '../../source/runner/runner.js';

describe('plainHttpWarning', () => {
  it('plain http beyond this machine: one line naming the server and what to do', () => {
    expect(plainHttpWarning('http://garden.example:7717/api/v1')).toBe(
      "warning: --server http://garden.example:7717 is plain http to another machine: the runner's token and every run's stream cross the network in the clear (use https, or a tunnel to a loopback address)",
    );
    expect(plainHttpWarning('http://10.0.0.5:7717')).toMatch(/^warning: --server http:\/\/10\.0\.0\.5:7717 is plain http/);
    expect(plainHttpWarning('http://[fd00::5]:7717')).toMatch(/^warning: --server http:\/\/\[fd00::5\]:7717 is plain http/);
  });

  it('https, or http to loopback, says nothing; nor does a URL that does not parse (the client says that one)', () => {
    for (const url of ['https://garden.example/api/v1', 'http://127.0.0.1:7717', 'http://127.8.9.10', 'http://localhost:7717', 'http://box.localhost', 'http://[::1]:7717', 'http://[::ffff:127.0.0.1]:7717', 'not a url']) {
      expect(plainHttpWarning(url), url).toBeUndefined();
    }
  });
});
