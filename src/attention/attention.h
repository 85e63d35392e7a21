// Scaled dot-product attention with a causal mask, the core of "Build a
// Large Language Model (From Scratch)", chapter 3: the shape and option
// structs, the SIMD kernel and its scalar oracle.
//
// Layout conventions (all tensors row-major float32, no padding):
//   q       [batch, heads,    query_len, head_dim]
//   k       [batch, kv_heads, key_len,   head_dim]
//   v       [batch, kv_heads, key_len,   value_dim]
//   out     [batch, heads,    query_len, value_dim]
//   weights [batch, heads,    query_len, key_len]   (optional)
// Grouped-query attention (GQA; multi-query when kv_heads == 1): query head
// h reads KV head h / (heads / kv_heads), as PyTorch's SDPA enable_gqa and
// the book's repeat_interleave. The KV heads are never repeated in memory.
// A KV cache (kv_capacity > key_len) keeps its rows at stride kv_capacity:
//   k [batch, kv_heads, kv_capacity, head_dim], first key_len rows used.
// A cache may store its rows as bfloat16 or int8 (kv_storage.h): then k and
// v point to rows of KvRowBytes(kv_dtype, head_dim / value_dim) bytes in
// that layout, and the kernels convert them tile by tile as they read.

#ifndef CAUSAL_ATTENTION_SRC_ATTENTION_H_
#define CAUSAL_ATTENTION_SRC_ATTENTION_H_

#include <stddef.h>
#include <stdint.h>

#include <optional>

#include "src/kv/kv_storage.h"
#include "src/base/status.h"

namespace causal_attention {

// Which keys a query may see.
//   kNone:        every key.
//   kTopLeft:     key j is visible to query i iff j <= i (PyTorch is_causal,
//                 the book's torch.triu(..., diagonal=1) mask).
//   kBottomRight: key j is visible to query i iff j <= i + (key_len -
//                 query_len): the last query sees every key, as in a decode
//                 step with cached keys. With query_len > key_len the first
//                 query_len - key_len rows see nothing and are all zeros.
// When query_len == key_len the two causal alignments are the same mask.
enum class CausalMask : int32_t { kNone = 0, kTopLeft = 1, kBottomRight = 2 };

// How the causal mask is applied (chapter 3 teaches both).
//   kNegInf:      masked scores are set to -inf before the softmax; masked
//                 key blocks are skipped entirely (about half the work).
//   kRenormalize: softmax over all keys, multiply by the lower-triangular
//                 mask, divide each row by its new sum. Computes the full
//                 score rows, as the book does (no key block is skipped).
//                 Where every visible key scores more than 60 below the
//                 row's max, the float route would underflow, so that row is
//                 normalised over its visible keys directly: the same value
//                 in exact arithmetic. With causal == kNone it is a no-op.
//                 The route is defined for a visible prefix [0, end) of each
//                 row without extra logits: with causal, sinks, a mask, a
//                 window_left or a softcap are refused (kInvalidOption,
//                 StatusDetail() names the option); key_lengths,
//                 window_right and query_offset combine with it.
enum class MaskStrategy : int32_t { kNegInf = 0, kRenormalize = 1 };

// Memory layout of q, k, v and out (weights stay [B, H, Tq, Tk] and
// log-sum-exp [B, H, Tq] in both).
//   kBHSD: q [B, H, Tq, D], k/v [B, Hkv, Tk, D], out [B, H, Tq, Dv].
//   kBSHD: q [B, Tq, H, D], k/v [B, Tk, Hkv, D], out [B, Tq, H, Dv]: the
//          layout projections produce (ONNX's 3-D [B, S, H·D]).
enum class Layout : int32_t { kBHSD = 0, kBSHD = 1 };

// Which scores before the softmax AttentionOptions::scores receives, named
// by the step of the forward that produced them (scale, then softcap, then
// the masks):
//   kScaled:     s = scale · q·k, for every key (seen or not)
//   kSoftcapped: softcap·tanh(s / softcap) for every key (s without softcap)
//   kMasked:     that plus the additive mask for the keys the row sees; -inf
//                for each key it does not (causal, window, key_lengths, a
//                boolean mask): the logits the softmax (and a sink) takes.
// ONNX Attention's qk_matmul_output: modes 0 and 1 are kSoftcapped (its
// reference applies softcap before the mask and returns the capped scores
// for both), mode 2 is kMasked, mode 3 the weights.
enum class ScoreStage : int32_t {
  kNone = 0,
  kScaled = 1,
  kSoftcapped = 2,
  kMasked = 3
};

// The arithmetic of the forward (inference only: the backward is float32).
//   kFloat32: float32 throughout.
//   kInt8:    SageAttention-style quantised products (int8_operands.h):
//             keys smoothed by their KV head's mean key (q·mean is added
//             back to each score, so every score rule sees q·k) and scaled
//             per channel, then stored as 13-bit integers, the values as
//             12-bit ones (int16 lanes, a scale per block of 32 values);
//             outlier key channels (up to 8, above 6x the median channel's
//             range) in float32; query rows rounded to 15 bits, one scale
//             per row; Q·Kᵀ and P·V in integer dot products
//             (src/attention/int16_rows-inl.h) where d and dv are multiples
//             of 16 and a block's rows a multiple of 4, in float32 on the
//             dequantised rows elsewhere; the softmax and every score rule
//             in float32. An int8 KV cache's rows are read as they are (its
//             int8 kernels, src/kv/int8_rows-inl.h). Accuracy: largest
//             |out − float64 reference| <= 1e-3 · the output's largest
//             |value| on N(0, 1) inputs, keys with large per-channel
//             offsets and keys with outlier channels x50
//             (tests/native/attention/int8_attention_test.cc; 8-bit keys
//             and 8-bit values would each give about 4e-3 on N(0, 1)).
//             Refused (kInvalidOption) with `training` and by
//             AttentionWithLogSumExp with a log_sum_exp output (what a
//             backward reads).
enum class Precision : int32_t { kFloat32 = 0, kInt8 = 1 };

// What an AttentionMask's data holds.
enum class MaskKind : int32_t { kNone = 0, kBoolean = 1, kAdditive = 2 };

// A mask broadcast to [batch, heads, query_len, key_len]. Stored row-major
// and dense with sizes dims = [b, h, q, k], each 1 (broadcast) or the full
// size. Read tile by tile, never expanded.
struct AttentionMask {
  MaskKind kind = MaskKind::kNone;
  // kBoolean: uint8_t, non-zero = may attend; kAdditive: float added to the
  // score (after scale and softcap), -inf allowed.
  const void* data = nullptr;
  int64_t dims[4] = {1, 1, 1, 1};
};

struct AttentionShape {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t query_len = 1;
  int64_t key_len = 1;
  int64_t head_dim = 1;
  int64_t value_dim = 1;
  int64_t kv_heads = 0;  // 0 means heads; else must divide heads
  // Rows allocated per KV head in k and v (a resident KV cache's capacity):
  // head j's keys start at k + j·kv_capacity·head_dim. 0 means key_len (the
  // dense layout); else must be >= key_len.
  int64_t kv_capacity = 0;
  // How k and v are stored (kv_storage.h); not kFloat32 only with layout
  // kBHSD, and only for the forward (the backward takes float32 k and v).
  KvDtype kv_dtype = KvDtype::kFloat32;
};

struct AttentionOptions {
  CausalMask causal = CausalMask::kTopLeft;
  MaskStrategy mask_strategy = MaskStrategy::kNegInf;
  // Multiplies Q·Kᵀ; empty means 1/sqrt(head_dim). Must be finite.
  std::optional<float> scale;
  // Dropout on the attention weights, applied only when `training`: each
  // weight is zeroed with probability `dropout` (quantised to 2^-24) and
  // the kept ones are multiplied by 1/(1 - dropout).
  float dropout = 0.0f;
  bool training = false;
  // The dropout mask is a pure function of (seed, batch, head, query, key):
  // the same seed gives the same mask on every target, thread count and
  // code path.
  uint64_t seed = 0;

  // --- Which keys a query sees (besides `causal`) ---------------------------
  // A key is visible when causal, the window, key_lengths and a boolean mask
  // all allow it. A row that sees no key gives zero output, zero weights and
  // log-sum-exp -inf (with sinks too).
  Layout layout = Layout::kBHSD;
  // Query i sits at position i + offset (keys at 0..key_len-1). Empty: 0 for
  // kTopLeft (and kNone), key_len - query_len for kBottomRight (per batch
  // item b: key_lengths[b] - query_len when key_lengths is set). Causal
  // masks use it (query at p sees keys j <= p); with kNone causal the
  // positions still place the window.
  std::optional<int64_t> query_offset;
  // [batch], each in [0, key_len]: keys j >= key_lengths[b] are invisible
  // to batch item b (ONNX nonpad_kv_seqlen). Null: every key.
  const int32_t* key_lengths = nullptr;
  // -1 unbounded; else in [0, 2^60]: a query at position p sees key j only if
  // p - window_left <= j <= p + window_right (with or without causal).
  int64_t window_left = -1;
  int64_t window_right = -1;
  // > 0: each score s (after scale) becomes softcap·tanh(s / softcap) before
  // any additive mask is added. 0: off.
  float softcap = 0.0f;
  // [heads] logits or null: row weights exp(s_j) / (exp(sink_h) + sum_j
  // exp(s_j)); the log-sum-exp includes the sink term.
  const float* sinks = nullptr;
  AttentionMask mask;

  // --- Scores before the softmax (an output, like the weights) -------------
  // kNone: no scores. Else `scores` [batch, heads, query_len, key_len] (not
  // null) receives them at that stage, written where the weight rows are
  // (the rows path: a [Tq, Tk] tensor exists only when asked for).
  ScoreStage score_stage = ScoreStage::kNone;
  float* scores = nullptr;

  // The forward's arithmetic (Precision).
  Precision precision = Precision::kFloat32;
};

// Scaled dot-product attention:
//   scores  = (Q · Kᵀ) · scale, masked by `causal`
//   weights = softmax(scores) over keys, then dropout (training only)
//   out     = weights · V
// With options.score_stage set, options.scores receives the scores before
// the softmax (ScoreStage).
// `weights` may be null; then no [query_len, key_len] matrix is ever
// materialised (online softmax over key tiles, O(tile) extra memory per
// thread). When dropout ran, `weights` holds the post-dropout values (rows
// no longer sum to 1).
// Rows with no visible key give zero weights and a zero output.
// Non-finite values: a query row that sees a NaN or ±Inf score (from NaN/Inf
// in q or k) gets NaN weights and a NaN output; NaN/Inf in v reaches exactly
// the outputs of the rows that see that key. Other rows are unaffected:
// "see" by the rules (causal, window, key lengths, a boolean mask), also
// for keys a rule hides inside a tile that a row otherwise multiplies
// (their values are skipped, not multiplied by 0); an additive mask's -inf
// is a score, not a rule.
// Accuracy: max abs error vs AttentionReference <= 1e-5·(1 + |ref|) on the
// tested shapes (see tests/native/attention/attention_test.cc).
// Runs on NumThreads() threads; the result is bit-identical for every
// thread count.
// Decode-shaped calls (without weights, query rows of one KV head's group
// <= 32) read each KV tile once for the whole group and split the keys into
// fixed chunks of kDecodeChunk across threads, merged by log-sum-exp.
Status Attention(const AttentionShape& shape, const AttentionOptions& options,
                 const float* q, const float* k, const float* v, float* out,
                 float* weights);

// The oracle: plain scalar loops accumulating in double, the same masking,
// dropout mask and non-finite rules as Attention. O(key_len) extra memory.
Status AttentionReference(const AttentionShape& shape,
                          const AttentionOptions& options, const float* q,
                          const float* k, const float* v, float* out,
                          float* weights);

// Attention that also writes, when `log_sum_exp` is not null, each query
// row's log-sum-exp of its visible scaled scores (before dropout):
//   log_sum_exp [batch, heads, query_len],
//   L_i = log sum_{j visible} exp(scale · q_i·k_j),
// so that softmax weight w_ij = exp(scale · q_i·k_j - L_i): what
// AttentionBackward (attention_backward.h) needs besides the output. The
// same value for both mask strategies. A row that sees no key has L = -inf;
// a row that sees a non-finite score has L = NaN. Costs nothing extra: the
// kernel's online softmax keeps the running max m and sum l of each row and
// L = m + log(l). Accuracy: |L - ref| <= 1e-5·(1 + |ref|) against
// AttentionWithLogSumExpReference on the tested shapes.
Status AttentionWithLogSumExp(const AttentionShape& shape,
                              const AttentionOptions& options, const float* q,
                              const float* k, const float* v, float* out,
                              float* weights, float* log_sum_exp);
// The same with the scalar oracle (L in double, rounded once).
Status AttentionWithLogSumExpReference(const AttentionShape& shape,
                                       const AttentionOptions& options,
                                       const float* q, const float* k,
                                       const float* v, float* out,
                                       float* weights, float* log_sum_exp);

// Keys per work item of the decode-shaped kernel: fixed, so that chunk
// boundaries (and the merge order) never depend on the thread count.
constexpr int64_t kDecodeChunk = 256;

// 1/sqrt(head_dim) rounded to float: the scale when options.scale is empty.
float DefaultScale(int64_t head_dim);

// Checks shape and options without computing anything (StatusDetail()
// names what it refused). The [B, H, Tq, Tk] weights are not sized here:
// they exist only when asked for (ValidateAttentionWeights).
Status ValidateAttention(const AttentionShape& shape,
                         const AttentionOptions& options);
// kTooLarge when a [batch, heads, query_len, key_len] float tensor's byte
// size does not fit size_t.
Status ValidateAttentionWeights(const AttentionShape& shape);

// The keep/drop decision of dropout for one attention weight; exposed so
// that tests and other implementations can reproduce the mask exactly.
// `row` is (batch * heads + head) * query_len + query.
bool DropoutKeeps(uint64_t seed, uint64_t row, uint32_t key, float dropout);

// The SIMD target Attention dispatches to on this machine, e.g. "AVX2" or
// "WASM" (never "EMU128" in a correctly built wasm module).
const char* ActiveTargetName();

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_ATTENTION_H_
