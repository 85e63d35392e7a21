// Whether a change kept every output's bits natively: the same kind of cases
// as bits.mjs (forward with and without weights and log-sum-exp, the
// backward, decode-shaped calls over float32, bfloat16 and int8 key/value
// rows; masks, windows, key lengths, softcap, sinks, GQA, dropout, both
// layouts, odd sizes) on every SIMD target this machine runs, one FNV-1a hash
// per target and case. Built by hand against a build's core library, once
// per checkout, and the two outputs compared:
//   g++ -O2 -std=c++17 -I. bench/studies/bits_native.cc \
//       build/native/libcausal_attention_core.a -lhwy -lpthread -o /tmp/bits
//   /tmp/bits > before.txt   (then after the change: diff before.txt after.txt)
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <cstring>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "src/attention/attention.h"
#include "src/attention/attention_backward.h"
#include "src/kv/kv_storage.h"

namespace ca = causal_attention;

namespace {

std::vector<float> Values(size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u;
  std::vector<float> out(n);
  for (float& x : out) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s / 2147483648.0 - 1.0);
  }
  return out;
}

uint32_t Hash(uint32_t h, const void* data, size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}
uint32_t Hash(uint32_t h, const std::vector<float>& v) {
  return Hash(h, v.data(), v.size() * sizeof(float));
}

struct Case {
  const char* name;
  void (*set)(ca::AttentionOptions*, std::vector<float>*, std::vector<uint8_t>*,
              std::vector<int32_t>*, const ca::AttentionShape&);
};

void Run(const char* target, const ca::AttentionShape& s0, const Case& c) {
  ca::AttentionShape s = s0;
  ca::AttentionOptions o;
  std::vector<float> fbuf;
  std::vector<uint8_t> bbuf;
  std::vector<int32_t> ibuf;
  c.set(&o, &fbuf, &bbuf, &ibuf, s);
  const size_t kvh = s.kv_heads ? s.kv_heads : s.heads;
  const size_t nq = s.batch * s.heads * s.query_len * s.head_dim;
  const size_t no = s.batch * s.heads * s.query_len * s.value_dim;
  const size_t nk = s.batch * kvh * s.key_len * s.head_dim;
  const size_t nv = s.batch * kvh * s.key_len * s.value_dim;
  const auto q = Values(nq, 1), k = Values(nk, 2), v = Values(nv, 3),
             dout = Values(no, 4);
  std::vector<float> out(no), w(s.batch * s.heads * s.query_len * s.key_len),
      lse(s.batch * s.heads * s.query_len), out2(no), lse2(lse.size());
  uint32_t h = 0x811c9dc5u;
  ca::Status st = ca::AttentionWithLogSumExp(s, o, q.data(), k.data(), v.data(),
                                             out.data(), nullptr, lse.data());
  h = Hash(Hash(h, out), lse);
  if (o.mask_strategy == ca::MaskStrategy::kNegInf) {
    st = ca::AttentionWithLogSumExp(s, o, q.data(), k.data(), v.data(),
                                    out2.data(), w.data(), lse2.data());
    h = Hash(Hash(Hash(h, out2), w), lse2);
    std::vector<float> gq(nq), gk(nk), gv(nv), gs(s.heads);
    st = ca::AttentionBackward(s, o, dout.data(), q.data(), k.data(), v.data(),
                               out.data(), lse.data(), gq.data(), gk.data(),
                               gv.data(), o.sinks ? gs.data() : nullptr);
    h = Hash(Hash(Hash(Hash(h, gq), gk), gv), gs);
  }
  printf("%08x %s %s B%lld H%lld KV%lld T%lld/%lld D%lld/%lld status %d\n", h,
         target, c.name, (long long)s.batch, (long long)s.heads,
         (long long)s.kv_heads, (long long)s.query_len, (long long)s.key_len,
         (long long)s.head_dim, (long long)s.value_dim, static_cast<int>(st));
}

void Decode(const char* target, ca::KvDtype dtype, int64_t d, int64_t kvh,
            int64_t group, int64_t tq, int64_t tk) {
  ca::AttentionShape s;
  s.heads = kvh * group;
  s.kv_heads = kvh;
  s.query_len = tq;
  s.key_len = tk;
  s.head_dim = s.value_dim = d;
  s.kv_dtype = dtype;
  ca::AttentionOptions o;
  o.causal = ca::CausalMask::kBottomRight;
  const auto q = Values(s.heads * tq * d, 5), kf = Values(kvh * tk * d, 6),
             vf = Values(kvh * tk * d, 7);
  const size_t row = ca::KvRowBytes(dtype, d);
  std::vector<uint8_t> k(kvh * tk * row), v(kvh * tk * row);
  ca::StoreKvRows(dtype, kf.data(), kvh * tk, d, k.data());
  ca::StoreKvRows(dtype, vf.data(), kvh * tk, d, v.data());
  std::vector<float> out(s.heads * tq * d), lse(s.heads * tq);
  const ca::Status st = ca::AttentionWithLogSumExp(
      s, o, q.data(), reinterpret_cast<const float*>(k.data()),
      reinterpret_cast<const float*>(v.data()), out.data(), nullptr, lse.data());
  printf("%08x %s decode dtype %d D%lld KV%lld x%lld rows %lld keys %lld status %d\n",
         Hash(Hash(0x811c9dc5u, out), lse), target, static_cast<int>(dtype),
         (long long)d, (long long)kvh, (long long)group, (long long)tq,
         (long long)tk, static_cast<int>(st));
}

}  // namespace

int main() {
  static const Case kCases[] = {
      {"causal", [](ca::AttentionOptions*, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) {}},
      {"none", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->causal = ca::CausalMask::kNone; }},
      {"bottom-right", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->causal = ca::CausalMask::kBottomRight; }},
      {"renormalize", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->mask_strategy = ca::MaskStrategy::kRenormalize; }},
      {"window", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->window_left = 5; }},
      {"window both", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->causal = ca::CausalMask::kNone; o->window_left = 3; o->window_right = 2; }},
      {"softcap", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->softcap = 5; }},
      {"sinks", [](ca::AttentionOptions* o, std::vector<float>* f, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape& s) { *f = Values(s.heads, 9); o->sinks = f->data(); }},
      {"bool mask", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>* m, std::vector<int32_t>*, const ca::AttentionShape& s) {
        const auto r = Values(s.query_len * s.key_len, 3);
        m->resize(r.size());
        for (size_t i = 0; i < r.size(); ++i) (*m)[i] = r[i] > -0.5f || i % s.key_len == 0;
        o->mask.kind = ca::MaskKind::kBoolean; o->mask.data = m->data();
        o->mask.dims[2] = s.query_len; o->mask.dims[3] = s.key_len; }},
      {"additive mask", [](ca::AttentionOptions* o, std::vector<float>* f, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape& s) {
        *f = Values(s.heads * s.query_len * s.key_len, 4);
        for (float& x : *f) if (x < -0.8f) x = -INFINITY;
        o->causal = ca::CausalMask::kNone;
        o->mask.kind = ca::MaskKind::kAdditive; o->mask.data = f->data();
        o->mask.dims[1] = s.heads; o->mask.dims[2] = s.query_len; o->mask.dims[3] = s.key_len; }},
      {"key lengths", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>* l, const ca::AttentionShape& s) {
        l->resize(s.batch);
        for (int64_t b = 0; b < s.batch; ++b) (*l)[b] = static_cast<int32_t>(s.key_len - 2 * b - 1 > 0 ? s.key_len - 2 * b - 1 : 1);
        o->causal = ca::CausalMask::kNone; o->key_lengths = l->data(); }},
      {"dropout", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->dropout = 0.2f; o->training = true; o->seed = 7; }},
      {"bshd", [](ca::AttentionOptions* o, std::vector<float>*, std::vector<uint8_t>*, std::vector<int32_t>*, const ca::AttentionShape&) { o->layout = ca::Layout::kBSHD; }},
  };
  const int64_t shapes[][7] = {
      {1, 1, 0, 1, 1, 1, 1},     {2, 3, 0, 5, 7, 3, 3},
      {1, 2, 0, 17, 17, 17, 17}, {1, 4, 2, 65, 65, 32, 24},
      {2, 2, 0, 130, 130, 64, 64}, {1, 8, 2, 4, 300, 64, 64},
      {1, 2, 0, 300, 300, 16, 16},
  };
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const char* name = hwy::TargetName(target);
    for (const auto& sh : shapes) {
      ca::AttentionShape s;
      s.batch = sh[0]; s.heads = sh[1]; s.kv_heads = sh[2]; s.query_len = sh[3];
      s.key_len = sh[4]; s.head_dim = sh[5]; s.value_dim = sh[6];
      for (const Case& c : kCases) Run(name, s, c);
    }
    for (const ca::KvDtype dt : {ca::KvDtype::kFloat32, ca::KvDtype::kBFloat16, ca::KvDtype::kInt8}) {
      for (const int64_t rows : {1, 3}) {
        Decode(name, dt, 64, 2, 4, rows, 333);
        Decode(name, dt, 128, 1, 8, rows, 333);
        Decode(name, dt, 48, 2, 1, rows, 333);
        Decode(name, dt, 32, 2, 2, rows, 70);
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  return 0;
}
