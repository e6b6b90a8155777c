/**
 * One database of the run's throwaway cluster for a test file
 * (test/global-setup.ts starts the cluster). A machine without PostgreSQL
 * fails these tests with the package to install: CI installs it, and a
 * skipped store test would hide a broken store.
 */
import { inject } from 'vitest';
import { freshDatabase } from './postgres.js';

/** Creates a database for this test file; `drop()` in afterAll. */
export async function testDatabase(prefix?: string): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const admin = inject('pgAdminUrl');
  if (!admin) throw new Error('PostgreSQL is not installed here (no /usr/lib/postgresql/<major>/bin): apt-get install postgresql');
  return freshDatabase(admin, prefix);
}

/** The admin URL of the run's cluster (superuser), for tests that make several databases or roles. */
export function adminUrl(): string {
  const admin = inject('pgAdminUrl');
  if (!admin) throw new Error('PostgreSQL is not installed here (no /usr/lib/postgresql/<major>/bin): apt-get install postgresql');
  return admin;
}
