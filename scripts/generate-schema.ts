/**
 * Writes schema/<record>.schema.json from the zod contracts (`npm run schema`).
 * test/contracts/schema-drift.test.ts fails when the files differ from what
 * this would write.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderSchemas } from '../source/contracts/json-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'schema');
fs.mkdirSync(dir, { recursive: true });
for (const [name, text] of Object.entries(renderSchemas())) {
  fs.writeFileSync(path.join(dir, name), text);
  process.stdout.write(`wrote schema/${name}\n`);
}

// The GraphQL door's SDL (docs/server/level2.md, "GraphQL"): its enums are the contracts' lists.
const { graphqlSdl } = await import('../source/server/graphql/schema.js');
fs.writeFileSync(path.join(root, 'docs/server/schema.graphql'), graphqlSdl());
process.stdout.write('wrote docs/server/schema.graphql\n');
