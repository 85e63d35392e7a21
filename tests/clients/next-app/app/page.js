'use client';
// The book's example in a client component: on the main thread and in
// worker mode, as tests/consumers/app/browser.js does on a plain page.
import { useEffect, useState } from 'react';
import { init } from 'causal-attention';
import { book } from './book.js';

// Once per id: React's development mode runs each effect twice.
const runs = new Map();
const run = (id, options) => {
  if (!runs.has(id)) runs.set(id, init(options).then(book, (error) => `failed: ${error.message}`));
  return runs.get(id);
};

function Result({ id, options }) {
  const [text, setText] = useState('');
  useEffect(() => { run(id, options).then(setText); }, []);
  return <p id={id} data-done={text ? 'true' : undefined}>{text}</p>;
}

export default function Page() {
  return <main><Result id="local" options={{}} /><Result id="worker" options={{ worker: true }} /></main>;
}
