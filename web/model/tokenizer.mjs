// Text ↔ token ids for a loaded model, from maintained libraries (never a
// hand-written BPE): GPT-2's byte-level BPE through gpt-tokenizer (its
// r50k_base encoding is GPT-2's), any Hugging Face tokenizer.json (the
// Llama family: SmolLM2, Llama 3.2) through @huggingface/tokenizers.

/**
 * @typedef {{ encode(text: string): number[], decode(ids: number[]): string, name: string }} TextTokenizer
 */

/**
 * The tokenizer of a model: GPT-2's for model_type 'gpt2', else the one
 * tokenizer.json describes (an Error saying so when there is none).
 * @param {string} modelType
 * @param {string | null} tokenizerJson
 * @returns {Promise<TextTokenizer>}
 */
export async function tokenizerFor(modelType, tokenizerJson) {
  if (modelType === 'gpt2' && !tokenizerJson) {
    const { encode, decode } = await import('/vendor/gpt-tokenizer/esm/encoding/r50k_base.js');
    return { encode: (t) => encode(t), decode: (ids) => decode(ids), name: 'GPT-2 BPE (gpt-tokenizer)' };
  }
  if (!tokenizerJson) {
    throw new Error(`a ${modelType} model needs its tokenizer.json: pick it with the other files`);
  }
  const { Tokenizer } = await import('/vendor/@huggingface/tokenizers/dist/tokenizers.mjs');
  const tokenizer = new Tokenizer(JSON.parse(tokenizerJson), {});
  return {
    encode: (t) => tokenizer.encode(t, { add_special_tokens: false }).ids,
    decode: (ids) => tokenizer.decode(ids),
    name: 'tokenizer.json (@huggingface/tokenizers)',
  };
}
