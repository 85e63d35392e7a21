// The Learn section's drawing budget (web/learn/views/state.mjs): at most
// one paint per animation frame, and while the worker trains, painting
// takes at most PAINT_SHARE of the page's thread (a dear paint delays the
// next); when the worker is idle every frame may paint.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

let frames = [];
let timers = [];
let clock = 0;
const saved = {};
before(() => {
  for (const k of ['requestAnimationFrame', 'setTimeout', 'performance']) saved[k] = globalThis[k];
  globalThis.requestAnimationFrame = (f) => frames.push(f);
  globalThis.setTimeout = (f, ms) => timers.push({ f, at: clock + ms });
  Object.defineProperty(globalThis, 'performance', { value: { now: () => clock }, configurable: true, writable: true });
});
after(() => {
  for (const [k, v] of Object.entries(saved)) Object.defineProperty(globalThis, k, { value: v, configurable: true, writable: true });
});

/** Runs the pending frames; a frame's paint advances the clock by `paintMs`. */
function runFrames() {
  const now = frames;
  frames = [];
  for (const f of now) f();
}

test('paints once per frame, and while training leaves the thread 1 − PAINT_SHARE of the time', async () => {
  const { PAINT_SHARE, draw, learn, setPainters } = await import('../../web/learn/views/state.mjs');
  let paints = 0;
  setPainters({ chart: () => { paints += 1; clock += 40; }, heads: null, status: null });
  learn.workerRunning = true;
  draw('chart');
  draw('chart');
  assert.equal(frames.length, 1, 'one frame asked for, however many draws');
  runFrames();
  assert.equal(paints, 1);
  // The paint took 40 ms: the next may start 40 / PAINT_SHARE ms after the first began.
  draw('chart');
  assert.equal(frames.length, 0, 'a dear paint delays the next frame');
  assert.equal(timers.length, 1);
  assert.equal(timers[0].at, 40 / PAINT_SHARE);
  clock = timers[0].at;
  timers.shift().f();
  runFrames();
  assert.equal(paints, 2);
  // Idle worker: the next draw goes to the next frame.
  learn.workerRunning = false;
  draw('chart');
  assert.equal(frames.length, 0);
  clock += 200;
  timers.shift().f(); // the wait set by the last paint (made while training)
  runFrames();
  assert.equal(paints, 3);
  draw('chart');
  assert.equal(frames.length, 1, 'not training: every frame may paint');
  assert.equal(timers.length, 0);
});
