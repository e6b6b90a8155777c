export * from './session.js';
export * from './event-follower.js';
export * from './startup.js';
export * from './notify.js';
