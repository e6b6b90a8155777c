export * from './decide.js';
export * from './book.js';
