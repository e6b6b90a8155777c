import { describe, expect, it } from 'vitest';
import { redactStoreUrl, storeUrlOf, storeUrlProblem } from '../../source/garden/index.js';

describe('the store URL', () => {
  it('never shows a password: in the user part or as a ?password= / sslpassword parameter', () => {
    expect(redactStoreUrl('postgres://pak2:S3cret@127.0.0.1:5432/garden')).toBe('postgres://pak2:***@127.0.0.1:5432/garden');
    const redacted = redactStoreUrl('postgres://127.0.0.1:5432/garden?user=pak2&password=S3cret&sslpassword=k3y');
    expect(redacted).not.toContain('S3cret');
    expect(redacted).not.toContain('k3y');
    expect(redacted).toBe('postgres://127.0.0.1:5432/garden?user=pak2&password=***&sslpassword=***');
    expect(redactStoreUrl('not a url at all with S3cret')).toBe('(an unparseable store URL)');
  });

  it('names the problem with a bad URL, never echoing it', () => {
    expect(storeUrlProblem('  postgres://pak2@127.0.0.1:5432/garden')).toBe('begins or ends with white space');
    expect(storeUrlProblem('postgres://pak2:pa/ss@127.0.0.1/garden')).toMatch(/percent-encoded/);
    expect(storeUrlProblem('mysql://u@h/d')).toMatch(/"mysql" is not a store pak2 knows/);
    expect(storeUrlProblem('postgres://u@127.0.0.1:5432/')).toMatch(/names no database/);
    expect(storeUrlProblem('postgres://pak2@127.0.0.1:5432/garden')).toBeUndefined();
  });

  it('PAK2_STORE_URL wins over [store].url, and a set but empty one is not passed over', () => {
    expect(storeUrlOf('postgres://a@h/d', { PAK2_STORE_URL: 'postgres://b@h/d' })).toEqual({ url: 'postgres://b@h/d', from: 'PAK2_STORE_URL' });
    expect(storeUrlOf('postgres://a@h/d', {})).toEqual({ url: 'postgres://a@h/d', from: 'store.url' });
    expect(storeUrlOf(undefined, {})).toBeUndefined();
    expect(storeUrlOf('postgres://a@h/d', { PAK2_STORE_URL: '' })).toEqual({ url: '', from: 'PAK2_STORE_URL' });
  });
});
