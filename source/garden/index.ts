export * from './paths.js';
export * from './config.js';
export * from './resolve.js';
export * from './store-url.js';
export * from './reload.js';
