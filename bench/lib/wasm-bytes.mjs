// The pieces of the WebAssembly binary format that the hand-assembled
// measurement kernels (simd-limit.mjs, read-bandwidth.mjs) are written in:
// LEB128 integers, sections, vectors, names and the opcodes they use.

/** Unsigned LEB128. */
export const leb = (n) => {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
export const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
export const vector = (items) => [...leb(items.length), ...items.flat()];
export const name = (s) => [...leb(s.length), ...new TextEncoder().encode(s)];

/** The module header: magic and version. */
export const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

// Value types and instructions.
export const I32 = 0x7f;
export const F32 = 0x7d;
export const V128 = 0x7b;
export const GET = 0x20;
export const SET = 0x21;
export const TEE = 0x22;
export const F32X4_ADD = [0xfd, ...leb(0xe4)];
export const F32X4_MUL = [0xfd, ...leb(0xe6)];
export const F32X4_EXTRACT_LANE = [0xfd, 0x1f];
// Relaxed SIMD (the proposal as Chromium 114+ and Node 22+ ship it; the same
// encoding as in our relaxed side module, build/wasm/gemm-side/*.wasm):
// f32x4.relaxed_madd(a, b, c) = a·b + c, fused or not.
export const F32X4_RELAXED_MADD = [0xfd, ...leb(0x105)];
