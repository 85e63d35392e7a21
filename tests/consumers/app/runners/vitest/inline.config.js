// Vitest with the package inlined (Vite transforms it as the app's own code).
export default { test: { server: { deps: { inline: ['causal-attention'] } } } };
