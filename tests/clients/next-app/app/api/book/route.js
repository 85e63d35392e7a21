// The server side (the bundle of the package's `node` entry): threads and worker mode.
import { init } from 'causal-attention';
import { book } from '../../book.js';

export const dynamic = 'force-dynamic';

export async function GET() {
  const local = await book(await init({ build: 'threads', threads: 2 }));
  const worker = await book(await init({ worker: true }));
  return Response.json({ local, worker });
}
