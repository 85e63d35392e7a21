// PyTorch's CPU default generator: the 32-bit Mersenne Twister (mt19937)
// seeded with the low 32 bits of the seed, torch.rand's float draw (24
// random bits of one 32-bit output, scaled to [0, 1)), and normal_'s
// Box-Muller fill of float tensors.

const N = 624;
const M = 397;
const MATRIX_A = 0x9908b0df;
const UPPER = 0x80000000;
const LOWER = 0x7fffffff;

/** torch.initial_seed() of a fresh process. */
const DEFAULT_SEED = 67280421310721n;

export class MT19937 {
  constructor(seed = DEFAULT_SEED) {
    this.state = new Uint32Array(N);
    this.index = N;
    this.seed(seed);
  }

  /**
   * Seeds from a BigInt or a non-negative safe integer (low 32 bits used).
   * @param {number | bigint} seed
   */
  seed(seed) {
    const s = Number(BigInt(seed) & 0xffffffffn);
    const st = this.state;
    st[0] = s;
    for (let i = 1; i < N; i++) {
      const prev = st[i - 1] ^ (st[i - 1] >>> 30);
      st[i] = Math.imul(1812433253, prev) + i;
    }
    this.index = N;
  }

  twist() {
    const st = this.state;
    for (let i = 0; i < N; i++) {
      const y = (st[i] & UPPER) | (st[(i + 1) % N] & LOWER);
      st[i] = st[(i + M) % N] ^ (y >>> 1) ^ (y & 1 ? MATRIX_A : 0);
    }
    this.index = 0;
  }

  /** The next 32-bit output, as an unsigned number. */
  nextUint32() {
    if (this.index >= N) this.twist();
    let y = this.state[this.index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /**
   * One float32 uniform draw in [from, to), computed in float32 exactly as
   * PyTorch's at::uniform_real_distribution<float>.
   */
  nextFloat(from = 0, to = 1) {
    const f = Math.fround;
    const x = f((this.nextUint32() & 0xffffff) * 2 ** -24);
    const a = f(from);
    const b = f(to);
    return f(f(x * f(b - a)) + a);
  }

  /**
   * n float32 draws from N(0, 1) as PyTorch's CPU normal_ fills a float
   * tensor of n >= 16 elements (ATen's normal_fill): n uniform draws, then
   * Box-Muller over blocks of 16 (u1 = 1 - first 8, u2 = last 8), and when
   * n is not a multiple of 16 the last 16 redrawn and transformed again; in
   * float32 as its scalar loop (its AVX2 loop may differ in the last bit).
   * Fewer than 16 elements: PyTorch draws them with its double Box-Muller
   * instead; here the same block rule is used on a 16-element block, then
   * cut (not PyTorch's numbers).
   * @param {number} n
   * @returns {Float32Array}
   */
  normalFloats(n) {
    const f = Math.fround;
    const size = Math.max(n, 16);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) data[i] = this.nextFloat(0, 1);
    const fill16 = (/** @type {number} */ at) => {
      for (let j = 0; j < 8; j++) {
        const u1 = f(1 - data[at + j]);
        const u2 = data[at + j + 8];
        const radius = f(Math.sqrt(f(-2 * f(Math.log(u1)))));
        const theta = f(2 * Math.PI * u2);
        data[at + j] = f(radius * f(Math.cos(theta)));
        data[at + j + 8] = f(radius * f(Math.sin(theta)));
      }
    };
    for (let i = 0; i + 16 <= size; i += 16) fill16(i);
    if (size % 16 !== 0) {
      for (let i = size - 16; i < size; i++) data[i] = this.nextFloat(0, 1);
      fill16(size - 16);
    }
    return size === n ? data : data.slice(0, n);
  }

  /** A 64-bit value from two outputs (for dropout seeds), as a BigInt. */
  nextUint64() {
    const lo = BigInt(this.nextUint32());
    const hi = BigInt(this.nextUint32());
    return (hi << 32n) | lo;
  }
}
