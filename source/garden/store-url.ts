/**
 * The PostgreSQL store's address (`[store].url` in PAK2.toml, or
 * `PAK2_STORE_URL`; docs/store/level2.md): a `postgres://` or
 * `postgresql://` URL. Pure: parsing and the form a message may show.
 */

/** Query parameters of a PostgreSQL URL that carry a secret (libpq's and the `pg` client's names). */
const SECRET_PARAMS = ['password', 'sslpassword', 'sslkey'];

/**
 * The URL with its password — in the user part or as a `?password=`
 * parameter — replaced by `***`: the only form a message, an event or the
 * status line shows.
 */
export function redactStoreUrl(url: string): string {
  try {
    const parsed = new URL(url.trim());
    if (parsed.password) parsed.password = '***';
    for (const name of [...parsed.searchParams.keys()]) if (SECRET_PARAMS.includes(name.toLowerCase())) parsed.searchParams.set(name, '***');
    // `***` as given, not percent-encoded: a reader sees at once that something was hidden.
    return parsed.toString().replace(/%2A%2A%2A/g, '***');
  } catch {
    return '(an unparseable store URL)';
  }
}

/**
 * Checks a store URL; returns the problem in words (never the URL itself:
 * it may hold a password), or undefined when it is usable.
 */
export function storeUrlProblem(url: string): string | undefined {
  if (url !== url.trim()) return 'begins or ends with white space';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `not a URL (expected postgres://user@host:port/database; a password with / # ? @ or : in it is written percent-encoded, e.g. %2F for /)`;
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    return `${JSON.stringify(parsed.protocol.replace(/:$/, ''))} is not a store pak2 knows (postgres://user@host:port/database)`;
  }
  if (!parsed.hostname && !parsed.searchParams.get('host')) return `names no host (postgres://user@host:port/database)`;
  if (parsed.pathname.replace(/^\//, '') === '') return `names no database (postgres://user@host:port/database)`;
  return undefined;
}

/**
 * The store URL a process uses for a garden: `PAK2_STORE_URL` when set (an
 * empty one is refused by the caller, not passed over), else `[store].url`;
 * undefined: the seeds' files.
 *
 * @returns the URL and where it came from (`PAK2_STORE_URL` or `store.url`), for messages.
 */
export function storeUrlOf(configUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): { url: string; from: 'PAK2_STORE_URL' | 'store.url' } | undefined {
  // Set, even empty or blank, it is meant: checked (and refused) rather than silently passed over.
  const fromEnv = env.PAK2_STORE_URL;
  if (fromEnv !== undefined) return { url: fromEnv, from: 'PAK2_STORE_URL' };
  return configUrl ? { url: configUrl, from: 'store.url' } : undefined;
}
