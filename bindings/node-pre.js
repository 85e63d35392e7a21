// Prepended (--extern-pre-js) to the pthreads build. emcc 3.1.6 emits an ES
// module whose Node branch still uses CommonJS globals (require, __dirname,
// __filename); Node 20 has none of them in ES modules. Define them from
// import.meta.url in Node only; browsers skip this block.
const [require, __dirname, __filename] =
  typeof process === 'object' && typeof process.versions?.node === 'string'
    ? await (async () => {
        const { createRequire } = await import('node:module');
        const { fileURLToPath } = await import('node:url');
        const path = await import('node:path');
        const file = fileURLToPath(import.meta.url);
        return [createRequire(import.meta.url), path.dirname(file), file];
      })()
    : [undefined, undefined, undefined];
