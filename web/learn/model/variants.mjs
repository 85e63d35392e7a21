// The attention the Learn section's model trains with: today's multi-head
// attention with learned positions ('full', GPT-2's), or one of the
// variants modern models use, each a GroupedQueryAttention of the package
// (the Llama chapter's class: rotary positions on queries and keys, so the
// model has no position table):
//
//   full    MultiHeadAttention, learned position embedding (GPT-2)
//   rope    GroupedQueryAttention with one key/value head per query head:
//           RoPE instead of learned positions, nothing else changed
//   gqa     RoPE and grouped-query attention: heads / 2 key/value heads
//           (one when the number of heads is odd), each shared by a group
//   window  RoPE and a sliding window of `window` tokens (each query sees
//           itself and the window − 1 before: Mistral, Gemma)
//   sinks   RoPE and gpt-oss's learned sink logit per head (a head may put
//           weight "nowhere")
//
// Same task, same seed, same batches: only the attention differs, so the
// loss curves and the step at which an induction head forms compare. A
// window shorter than the repeat period cannot reach the earlier
// occurrence of a token, so no induction head can form.

/** The variants, in the select's order. */
export const VARIANTS = ['full', 'gqa', 'window', 'sinks', 'rope'];

/** Key/value heads of the gqa variant for `heads` query heads. */
export const kvGroupsFor = (heads) => (heads % 2 === 0 ? heads / 2 : 1);

/** Whether the variant adds a learned position embedding (only 'full': the others rotate). */
export const learnsPositions = (attention) => attention === 'full';

/**
 * One attention layer of the variant: `s` holds attention, window, dModel,
 * heads and contextLength (checked by checkVariant).
 */
export function attentionLayer(ca, s) {
  const { dModel: d, heads, contextLength } = s;
  if (s.attention === 'full') return new ca.MultiHeadAttention(d, d, contextLength, 0.0, heads);
  const kvGroups = s.attention === 'gqa' ? kvGroupsFor(heads) : heads;
  return new ca.GroupedQueryAttention(d, d, heads, kvGroups, {
    contextLength,
    ...(s.attention === 'window' && { slidingWindow: s.window }),
    ...(s.attention === 'sinks' && { sinks: true }),
  });
}

/** The variant settings' problems as sentences (empty when they are fine). */
export function checkVariant(s) {
  if (!VARIANTS.includes(s.attention)) {
    return [`attention must be one of ${VARIANTS.join(', ')}, got ${s.attention}.`];
  }
  const problems = [];
  const size = s.dModel / s.heads;
  if (s.attention !== 'full' && Number.isInteger(size) && size % 2 !== 0) {
    problems.push(`RoPE needs an even head size (d_model / heads), got ${s.dModel} / ${s.heads} = ${size}.`);
  }
  return problems;
}

/** A sentence on the chosen variant, for the form's hint. */
export function variantHint(s) {
  const P = `the repeat period (${Math.ceil(s.contextLength / 4)} to ${Math.floor(s.contextLength / 2)} tokens)`;
  switch (s.attention) {
    case 'full': return 'Multi-head attention with a learned position embedding, as GPT-2.';
    case 'rope': return 'RoPE: queries and keys rotated by position (Llama); no position embedding.';
    case 'gqa': return `Grouped-query attention with RoPE: ${kvGroupsFor(s.heads)} key/value head(s) shared by ` +
      `${s.heads} query heads (Llama 3).`;
    case 'window': return `A sliding window with RoPE: each token sees itself and the ${s.window - 1} before ` +
      `(Mistral, Gemma). A window shorter than ${P} cannot reach the earlier occurrence.`;
    case 'sinks': return 'Learned attention sinks with RoPE: one logit per head that takes weight without a value (gpt-oss).';
    default: return '';
  }
}
