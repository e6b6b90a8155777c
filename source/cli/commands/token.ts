import fs from 'node:fs';
import type { Command } from 'commander';
import { FILE_TOKEN_NAME, TOKEN_ROLES } from '../../contracts/index.js';
import { table } from '../../format.js';
import { tokenFile } from '../../server/auth.js';
import { createToken, readTokens, revokeToken, tokensFile } from '../../server/tokens.js';
import { gardenOf, printJson } from '../context.js';
import type { CliIO } from '../main.js';

/**
 * `pak2 token create|list|revoke` (docs/server/level2.md, "Tokens and
 * roles"): server tokens with a role, kept hashed in
 * `<runtime-root>/serve/tokens.json`. `create` prints the token once on
 * stdout (it is never stored); a running server takes a new or revoked
 * token from its next request. Bad input (an unknown role, a bad, reserved
 * or taken name, an unknown name to revoke) is one line and a non-zero exit.
 */
export function registerToken(program: Command, io: CliIO): void {
  const token = program.command('token').description('server tokens with a role (operator, runner, read): create, list, revoke');

  token
    .command('create')
    .description('make a token; prints it once on stdout (only its hash is kept)')
    .requiredOption('--role <role>', `the token's role: ${TOKEN_ROLES.join(', ')}`)
    .requiredOption('--name <name>', "the token's name (a runner token's name is its runner's name)")
    .option('--json', 'print {token, name, role, created_at} as JSON')
    .action(async (opts: { role: string; name: string; json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const made = await createToken(garden.paths, { role: opts.role, name: opts.name });
      if (opts.json) return printJson(io, { token: made.token, name: made.record.name, role: made.record.role, created_at: made.record.created_at });
      io.out(made.token);
      io.err(`pak2: ${made.record.role} token ${made.record.name} made; it is shown this once (only its SHA-256 is kept, in ${made.file}); pak2 token revoke ${made.record.name} ends it`);
    });

  token
    .command('list')
    .description('the tokens: name, role, when made, when revoked (never the tokens themselves)')
    .option('--json', 'print the records (name, role, hash, created_at, revoked_at) as JSON')
    .action(async (opts: { json?: boolean }, command: Command) => {
      const garden = gardenOf(command, io);
      const tokens = await readTokens(garden.paths);
      if (opts.json) return printJson(io, tokens);
      const fileToken = fs.existsSync(tokenFile(garden.paths));
      const rows = tokens.map((t) => [t.name, t.role, t.created_at.replace('T', ' ').slice(0, 19), t.revoked_at ? `revoked ${t.revoked_at.replace('T', ' ').slice(0, 19)}` : 'active']);
      if (fileToken) rows.unshift([FILE_TOKEN_NAME, 'operator', '-', 'active (the serve/token file)']);
      if (rows.length === 0) return io.out(`no tokens yet (${tokensFile(garden.paths)}): pak2 token create --role runner --name NAME`);
      io.out(table(['NAME', 'ROLE', 'CREATED', 'STATE'], rows));
    });

  token
    .command('revoke')
    .description('revoke a token: a running server answers it 401 from its next request')
    .argument('<name>', 'the token name')
    .action(async (name: string, _opts: unknown, command: Command) => {
      const garden = gardenOf(command, io);
      const revoked = await revokeToken(garden.paths, name);
      io.err(`pak2: revoked ${revoked.role} token ${revoked.name}`);
    });
}
