import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { postgresBinDir, startCluster, type Cluster } from './support/postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The admin URL of the run's throwaway PostgreSQL cluster; '' when PostgreSQL is not installed. */
    pgAdminUrl: string;
  }
}

/**
 * Builds dist/ and the CLI's bundle once (npm run build), so tests that run
 * the real `bin/pak2.js` test the current source; starts one throwaway
 * PostgreSQL cluster for the run (test/support/postgres.ts) and stops and
 * removes it at the end.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(root, 'scripts/bundle.mjs')], { stdio: 'inherit' });
  let cluster: Cluster | undefined;
  if (postgresBinDir()) cluster = await startCluster();
  project.provide('pgAdminUrl', cluster?.url ?? '');
  return () => cluster?.stop();
}
