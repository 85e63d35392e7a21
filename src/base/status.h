// Errors are values: every public function of the core returns a Status and
// never throws or aborts on bad arguments. The JS side mirrors these codes
// in bindings/engine/codes.mjs (a test checks the two agree).

#ifndef CAUSAL_ATTENTION_SRC_STATUS_H_
#define CAUSAL_ATTENTION_SRC_STATUS_H_

#include <stdint.h>

namespace causal_attention {

enum class Status : int32_t {
  kOk = 0,
  kInvalidShape = 1,   // a dimension is < 1, or sizes that do not fit
                       // together (e.g. heads not divisible by kv heads)
  kTooLarge = 2,       // a tensor's byte size does not fit in size_t
  kInvalidOption = 3,  // unknown enum value, dropout outside [0, 1),
                       // non-finite scale, a new option out of range
                       // (StatusDetail() names it)
  kNullPointer = 4,    // a required pointer is null
  kOutOfMemory = 5,    // a workspace allocation failed
};

// A short English description of `status` (static storage).
const char* StatusMessage(Status status);

// What the last failing argument check on this thread refused, naming the
// argument (e.g. "weights: batch·heads·query_len·key_len·4 bytes do not fit
// size_t"); "" after a check that passed. Static or thread-local storage,
// valid until the next check on this thread.
const char* StatusDetail();

namespace internal {
// Records the detail of a refusal and returns `status` (validate.cc).
Status Refuse(Status status, const char* detail);
}  // namespace internal

}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_SRC_STATUS_H_
