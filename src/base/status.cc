#include "src/base/status.h"

namespace causal_attention {

const char* StatusMessage(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kInvalidShape:
      return "invalid shape: every dimension must be >= 1 and the sizes must "
             "fit together";
    case Status::kTooLarge:
      return "tensor too large: its byte size does not fit in size_t";
    case Status::kInvalidOption:
      return "invalid option: an enum out of range, dropout outside [0, 1), "
             "a non-finite scale or another option out of its range "
             "(StatusDetail names it)";
    case Status::kNullPointer:
      return "null pointer for a required tensor";
    case Status::kOutOfMemory:
      return "out of memory while allocating the workspace";
  }
  return "unknown status";
}

namespace {
thread_local const char* last_detail = "";
}  // namespace

const char* StatusDetail() { return last_detail; }

namespace internal {
Status Refuse(Status status, const char* detail) {
  last_detail = detail;
  return status;
}
}  // namespace internal

}  // namespace causal_attention
