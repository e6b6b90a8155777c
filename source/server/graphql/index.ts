export * from './errors.js';
export * from './follower.js';
export * from './http.js';
export * from './prepare.js';
export * from './schema.js';
