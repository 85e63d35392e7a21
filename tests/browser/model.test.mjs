// The page's "A real model" section in headless Chromium, on a small random
// GPT-2 checkpoint written as real files (config.json + model.safetensors
// with the hub's names and layouts, GPT-2's own vocabulary size so that
// GPT-2's tokenizer applies): loaded through #model-files and through the
// hub download (served from the page's origin with ?hub=), the status hooks,
// the predictions against the same model run in Node, every head's
// triangle and scores, generation against Node's greedy generate, a bad
// file's visible message, and the lab's views on a GPT-2 and a Llama
// checkpoint against Node. Screenshots (tests/browser/screenshots/):
// model.png, model-lab.png, model-lab-circuits.png, model-lab-llama.png.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { encode } from 'gpt-tokenizer/encoding/r50k_base';
import { init } from 'causal-attention';
import { writeSafetensors } from '../../bindings/models/safetensors.mjs';
import { modelLab } from '../../web/model/model-lab.mjs';
import { SCREENSHOTS, openDemo, openPage, readTable, useEngineAndServer } from './browser.mjs';
import { describeEngines, lacking } from './engines.mjs';

const ca = await init();

describeEngines('the real-model section', (engine) => {
const env = useEngineAndServer(engine);

const CONFIG = { model_type: 'gpt2', vocab_size: 50257, n_positions: 64, n_embd: 16, n_head: 2, n_layer: 2 };

/** A random GPT-2 checkpoint's tensors, by the hub's names ([in, out] Conv1D weights). */
function checkpoint() {
  let s = 11;
  const rand = (n, scale) => Float32Array.from({ length: n }, () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5) * scale);
  const E = CONFIG.n_embd;
  const t = {
    'wte.weight': { shape: [CONFIG.vocab_size, E], data: rand(CONFIG.vocab_size * E, 2) },
    'wpe.weight': { shape: [CONFIG.n_positions, E], data: rand(CONFIG.n_positions * E, 1) },
    'ln_f.weight': { shape: [E], data: Float32Array.from({ length: E }, () => 1) },
    'ln_f.bias': { shape: [E], data: new Float32Array(E) },
  };
  for (let l = 0; l < CONFIG.n_layer; l++) {
    const h = `h.${l}.`;
    Object.assign(t, {
      [`${h}ln_1.weight`]: { shape: [E], data: Float32Array.from({ length: E }, () => 1) },
      [`${h}ln_1.bias`]: { shape: [E], data: rand(E, 0.1) },
      [`${h}attn.c_attn.weight`]: { shape: [E, 3 * E], data: rand(3 * E * E, 3) },
      [`${h}attn.c_attn.bias`]: { shape: [3 * E], data: rand(3 * E, 0.1) },
      [`${h}attn.c_proj.weight`]: { shape: [E, E], data: rand(E * E, 1) },
      [`${h}attn.c_proj.bias`]: { shape: [E], data: rand(E, 0.1) },
      [`${h}ln_2.weight`]: { shape: [E], data: Float32Array.from({ length: E }, () => 1) },
      [`${h}ln_2.bias`]: { shape: [E], data: rand(E, 0.1) },
      [`${h}mlp.c_fc.weight`]: { shape: [E, 4 * E], data: rand(4 * E * E, 1) },
      [`${h}mlp.c_fc.bias`]: { shape: [4 * E], data: rand(4 * E, 0.1) },
      [`${h}mlp.c_proj.weight`]: { shape: [4 * E, E], data: rand(4 * E * E, 1) },
      [`${h}mlp.c_proj.bias`]: { shape: [E], data: rand(E, 0.1) },
    });
  }
  return t;
}

const bytes = writeSafetensors(checkpoint());
const dir = mkdtempSync(join(tmpdir(), 'ca-model-'));
writeFileSync(join(dir, 'config.json'), JSON.stringify(CONFIG));
writeFileSync(join(dir, 'model.safetensors'), bytes);
const reference = ca.loadPretrained({ config: CONFIG, safetensors: bytes });

const loaded = (page) => page.waitForSelector('#model-status[data-loaded="true"]', { timeout: 60000 });
const analysedAfter = (page, n) => page.waitForFunction((k) => Number(document.getElementById('model-section').dataset.analysed ?? 0) > k,
  n, { timeout: 60000 });
const analysed = (page) => page.$eval('#model-section', (el) => Number(el.dataset.analysed ?? 0));

/** A small Llama-family checkpoint (SmolLM2's layout) and a word-level tokenizer.json for its vocabulary. */
function llamaFiles() {
  const words = 'the a cat dog sat on mat and ran to . , big small red'.split(' ');
  const vocab = Object.fromEntries([['[UNK]', 0], ...words.map((w, i) => [w, i + 1])]);
  const tokenizer = { version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Whitespace' }, post_processor: null, decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordLevel', vocab, unk_token: '[UNK]' } };
  const config = { model_type: 'llama', vocab_size: 16, max_position_embeddings: 64, hidden_size: 16, num_attention_heads: 4,
    num_key_value_heads: 2, num_hidden_layers: 2, intermediate_size: 24, rope_theta: 10000, tie_word_embeddings: true };
  let s = 5;
  const rand = (shape) => ({ shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b) },
    () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32 - 0.5) * 2) });
  const t = { 'model.embed_tokens.weight': rand([16, 16]), 'model.norm.weight': rand([16]) };
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}.`;
    Object.assign(t, {
      [`${p}self_attn.q_proj.weight`]: rand([16, 16]), [`${p}self_attn.k_proj.weight`]: rand([8, 16]),
      [`${p}self_attn.v_proj.weight`]: rand([8, 16]), [`${p}self_attn.o_proj.weight`]: rand([16, 16]),
      [`${p}mlp.gate_proj.weight`]: rand([24, 16]), [`${p}mlp.up_proj.weight`]: rand([24, 16]),
      [`${p}mlp.down_proj.weight`]: rand([16, 24]), [`${p}input_layernorm.weight`]: rand([16]),
      [`${p}post_attention_layernorm.weight`]: rand([16]),
    });
  }
  return { config, tokenizer, bytes: writeSafetensors(t) };
}


/**
 * The lab's views on a loaded model against the same model in Node: the
 * composition between the shown layers (norm scales folded), the logit
 * lens on the text's tokens `ids` (its last layer's last token is the top
 * prediction), the chosen head's circuits drawn, and a head chosen in the
 * select redraws them.
 */
async function checkLabViews(page, reference, ids, { layers, heads, positions }) {
  const T = ids.length;
  const [from, to] = await page.$eval('#model-lab-composition', (el) => [Number(el.dataset.fromLayer), Number(el.dataset.toLayer)]);
  assert.ok(from >= 1 && to > from && to <= layers, `${from} → ${to}`);
  const [a, b] = [reference.trfBlocks.at(from - 1), reference.trfBlocks.at(to - 1)];
  const scale = (block) => block.norm1.scale ?? block.norm1.weight;
  const expect = ca.compositionScores(a.att, b.att, { earlierScale: scale(a), laterScale: scale(b) });
  for (const kind of ['K', 'Q', 'V']) {
    const shown = await page.$$eval(`#model-lab [data-compose="${kind}"]`, (s) => s.map((x) => [x.dataset.from, x.dataset.to, Number(x.dataset.score)]));
    assert.equal(shown.length, heads * heads, kind);
    for (const [f, t, score] of shown) {
      const [i, j] = [Number(f.split('.')[1]) - 1, Number(t.split('.')[1]) - 1];
      assert.equal(f.split('.')[0], String(from));
      assert.equal(t.split('.')[0], String(to));
      const e = expect[kind.toLowerCase()][i * heads + j];
      assert.ok(Math.abs(score - e) <= 1e-6, `${kind} ${f} → ${t}: ${score} vs ${e}`);
    }
  }
  assert.match(await page.textContent('#model-lab-views'), /norm scale .* is folded into\s+its W_Q, W_K and W_V/);
  assert.ok(await page.isVisible('#model-lab-composition'));
  // The logit lens: (layers + 1) rows of the last 12 positions, Node's numbers.
  const lens = ca.logitLens(reference, ids);
  const cells = await page.$$eval('#model-lab [data-lens-layer]', (c) => c.map((x) => ({
    layer: Number(x.dataset.lensLayer), position: Number(x.dataset.position), token: Number(x.dataset.token),
    probability: Number(x.dataset.probability),
  })));
  assert.equal(cells.length, (layers + 1) * Math.min(12, T));
  for (const c of cells) {
    assert.equal(c.token, lens.tokens[c.layer * T + c.position], `layer ${c.layer} position ${c.position}`);
    assert.ok(Math.abs(c.probability - lens.probabilities[c.layer * T + c.position]) <= 1e-5);
  }
  const top = await page.$eval('#model-predictions li', (li) => Number(li.dataset.tokenId));
  assert.equal(cells.find((c) => c.layer === layers && c.position === T - 1).token, top, 'the lens\'s last layer predicts as the model');
  // The circuits: drawn for the chosen head; another head chosen redraws them.
  const drawn = (id) => page.$eval(`#${id} canvas.base`, (c) => c.width > 0).catch(() => false);
  assert.ok(await drawn('model-lab-qk-tokens'));
  assert.ok(await drawn('model-lab-ov-tokens'));
  assert.equal(await page.isVisible('#model-lab-qk-positions'), positions);
  const chosen = await page.$eval('#model-lab-head', (s) => s.value);
  const other = chosen === '0.0' ? '1.1' : '0.0';
  const views = await page.$eval('#model-lab', (el) => Number(el.dataset.views ?? 0));
  await page.selectOption('#model-lab-head', { value: other });
  await page.waitForFunction((n) => Number(document.getElementById('model-lab').dataset.views ?? 0) > n, views);
  assert.match(await page.textContent('#model-lab-circuits-title'), /^Circuits of layer \d, head \d over the text’s tokens$/);
  const [l, h] = other.split('.').map(Number);
  assert.equal(await page.getAttribute('#model-lab-circuits', 'data-head'), `${l + 1}.${h + 1}`);
}

describe('the page\'s real-model section', () => {
  it('loads GPT-2 files, shows the status, predictions, heads and scores, and generates (against Node)', async () => {
    const { page, problems } = await openDemo(env.browser, env.server.url);
    await page.setInputFiles('#model-files', [join(dir, 'config.json'), join(dir, 'model.safetensors')]);
    await loaded(page);
    await analysedAfter(page, 0);
    const status = await page.$eval('#model-status', (el) => ({ ...el.dataset, text: el.textContent }));
    assert.equal(status.modelType, 'gpt2');
    assert.equal(status.layers, '2');
    assert.equal(status.heads, '2');
    assert.equal(Number(status.parameters), reference.numParameters());
    assert.match(status.text, /2 layers × 2 heads/);

    // The predictions: the same model in Node on the same tokens.
    const text = await page.inputValue('#model-text');
    const ids = encode(text).slice(-48);
    const logits = reference.forward(ids, [1, ids.length]);
    const last = logits.subarray((ids.length - 1) * CONFIG.vocab_size);
    const order = Array.from(last.keys()).sort((a, b) => last[b] - last[a]).slice(0, 10);
    const shown = await page.$$eval('#model-predictions li', (lis) => lis.map((li) => ({
      id: Number(li.dataset.tokenId), p: Number(li.dataset.probability), text: li.textContent,
    })));
    assert.deepEqual(shown.map((s) => s.id), order);
    for (let i = 1; i < shown.length; i++) assert.ok(shown[i].p <= shown[i - 1].p);
    const max = Math.max(...last);
    const sum = last.reduce((a, x) => a + Math.exp(x - max), 0);
    assert.ok(Math.abs(shown[0].p - Math.exp(last[order[0]] - max) / sum) < 1e-5);

    // Every head: a triangle and its scores.
    const heads = await page.$$eval('figure[data-model-head]', (figs) => figs.map((f) => ({
      name: f.dataset.modelHead, induction: Number(f.dataset.induction), prev: Number(f.dataset.previousToken),
      drawn: f.querySelector('canvas.base')?.width > 0,
    })));
    assert.deepEqual(heads.map((h) => h.name), ['1.1', '1.2', '2.1', '2.2']);
    for (const h of heads) {
      assert.ok(h.induction >= 0 && h.induction <= 1 && h.prev >= 0 && h.prev <= 1, JSON.stringify(h));
    }
    assert.equal(await page.$$eval('#model-scores-body tr', (r) => r.length), 4);

    // Open layer 2, head 1 in the pipeline: its softmax panel holds the weights Node computes.
    await page.click('figure[data-model-head="2.1"] button');
    await page.waitForSelector('body[data-model-head="2.1"]');
    assert.equal(await page.textContent('#pipeline-title'), 'The pipeline: the loaded model\u2019s layer 2, head 1');
    const T = ids.length;
    const weights = reference.forward(ids, [1, T], { returnWeights: true }).weights[1];
    const table = await readTable(page, '#panel-weights');
    assert.equal(table.cells.length, T);
    table.cells.forEach((row, i) => row.forEach((cell, j) => {
      if (j > i) assert.ok(cell.masked || cell.value === 0, `(${i}, ${j}) above the diagonal`);
      else assert.ok(Math.abs(cell.value - weights[i * T + j]) < 1e-5, `(${i}, ${j}): ${cell.value} vs ${weights[i * T + j]}`);
    }));
    await page.$eval('#pipeline-title', (el) => el.scrollIntoView());
    await page.screenshot({ path: join(SCREENSHOTS, 'model-pipeline.png') });

    // Find the circuit: attribution for every head, the best patched exactly; the same numbers as Node's.
    await page.click('#model-lab-run');
    await page.waitForSelector('#model-lab[data-ready]', { timeout: 60000 });
    const probe = Int32Array.from((await page.getAttribute('#model-lab', 'data-probe')).split(',').map(Number));
    const node = await modelLab(ca, reference, probe, 20, { layers: 2, heads: 2, vocab: CONFIG.vocab_size, embDim: CONFIG.n_embd });
    const shownLab = await page.$$eval('#model-lab [data-attrib-head]', (cells) => cells.map((c) => ({
      head: c.dataset.attribHead, estimate: Number(c.dataset.estimate),
      restored: c.parentElement.querySelector('[data-patch-head]')?.dataset.restored,
      logit: Number(c.parentElement.querySelector('[data-dla-head]').dataset.logit),
    })));
    assert.equal(shownLab.length, 4);
    node.attribution.forEach((a, i) => {
      assert.equal(shownLab[i].head, `${a.layer + 1}.${a.head + 1}`);
      assert.ok(Math.abs(shownLab[i].estimate - a.estimate) <= 1e-4 * (1 + Math.abs(a.estimate)), `${shownLab[i].estimate} vs ${a.estimate}`);
      assert.ok(Math.abs(shownLab[i].logit - a.logit) <= 1e-4 * (1 + Math.abs(a.logit)), `direct logit ${shownLab[i].logit} vs ${a.logit}`);
    });
    node.exact.forEach((e) => {
      const row = shownLab.find((x) => x.head === `${e.layer + 1}.${e.head + 1}`);
      assert.ok(Math.abs(Number(row.restored) - e.restored) <= 1e-4 * (1 + Math.abs(e.restored)));
    });
    await checkLabViews(page, reference, ids, { layers: 2, heads: 2, positions: true });
    await page.$eval('#model-lab', (el) => el.scrollIntoView());
    await page.screenshot({ path: join(SCREENSHOTS, 'model-lab.png'), fullPage: false });
    await page.$eval('#model-lab-circuits', (el) => el.scrollIntoView());
    await page.screenshot({ path: join(SCREENSHOTS, 'model-lab-circuits.png'), fullPage: false });

    // Generation: Node's greedy generate on the same tokens.
    const before = await analysed(page);
    await page.click('#model-generate');
    await analysedAfter(page, before);
    const expected = reference.generate(ids, { maxNewTokens: 10 });
    const { decode } = await import('gpt-tokenizer/encoding/r50k_base');
    assert.equal(await page.inputValue('#model-text'), text + decode([...expected.subarray(ids.length)]));
    await page.$eval('#model-section', (el) => el.scrollIntoView());
    await page.screenshot({ path: join(SCREENSHOTS, 'model.png'), fullPage: false });
    console.log(`  predictions: ${shown.slice(0, 3).map((s) => s.text.trim()).join(' | ')}; ` +
      `heads: ${heads.map((h) => `${h.name} ind ${h.induction} prev ${h.prev}`).join(', ')}`);
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('loads a Llama-family checkpoint with its tokenizer.json, and says when tokenizer.json is missing', async () => {
    const { config, tokenizer, bytes: llama } = llamaFiles();
    const { page, problems } = await openDemo(env.browser, env.server.url);
    const file = (name, body) => ({ name, mimeType: 'application/octet-stream', buffer: Buffer.from(body) });
    await page.setInputFiles('#model-files', [file('config.json', JSON.stringify(config)), file('model.safetensors', llama)]);
    await page.waitForFunction(() => /needs its tokenizer\.json/.test(document.getElementById('model-status').textContent));
    await page.setInputFiles('#model-files', [file('config.json', JSON.stringify(config)), file('model.safetensors', llama),
      file('tokenizer.json', JSON.stringify(tokenizer))]);
    await loaded(page);
    assert.equal(await page.$eval('#model-status', (el) => el.dataset.modelType), 'llama');
    await page.fill('#model-text', 'the cat sat on the mat and the dog');
    await page.waitForFunction(() => document.querySelectorAll('#model-tokens .chip').length === 9);
    const { Tokenizer } = await import('@huggingface/tokenizers');
    const ids = new Tokenizer(tokenizer, {}).encode('the cat sat on the mat and the dog', { add_special_tokens: false }).ids;
    const reference = ca.loadPretrained({ config, safetensors: llama });
    const logits = reference.forward(ids, [1, ids.length]);
    const last = logits.subarray((ids.length - 1) * 16);
    const best = last.indexOf(Math.max(...last));
    await page.waitForFunction((id) => document.querySelector('#model-predictions li')?.dataset.tokenId === String(id), best);
    assert.equal(await page.$$eval('figure[data-model-head]', (f) => f.length), 8);
    await page.click('#model-lab-run');
    await page.waitForSelector('#model-lab[data-ready]', { timeout: 60000 });
    assert.equal(await page.$$eval('#model-lab [data-attrib-head]', (c) => c.length), 8);
    await checkLabViews(page, reference, ids, { layers: 2, heads: 4, positions: false });
    await page.$eval('#model-lab-views', (el) => el.scrollIntoView());
    await page.screenshot({ path: join(SCREENSHOTS, 'model-lab-llama.png') });
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('downloads from the hub (a local base URL) and says clearly what is wrong with a bad file', { skip: lacking(engine, 'route') }, async () => {
    const { page, problems } = await openPage(env.browser, env.server.url, '?hub=/test-hub');
    await page.waitForSelector('body[data-ready="true"]', { timeout: 30000 });
    const served = [];
    await page.route((url) => url.pathname.startsWith('/test-hub/'), (route) => {
      const name = route.request().url().split('/').pop();
      served.push(name);
      if (name === 'config.json') return route.fulfill({ body: JSON.stringify(CONFIG), contentType: 'application/json' });
      if (name === 'model.safetensors') return route.fulfill({ body: Buffer.from(bytes), contentType: 'application/octet-stream' });
      return route.fulfill({ status: 404, body: 'not found' });
    });
    await page.selectOption('#model-hub-name', { label: 'gpt2' });
    await page.click('#model-hub-load');
    await loaded(page).catch(async (e) => {
      throw new Error(`${e.message}; status '${await page.textContent('#model-status')}', served ${served}, ${problems}`);
    });
    assert.deepEqual(served, ['config.json', 'model.safetensors.index.json', 'model.safetensors']);
    assert.equal(await page.$eval('#model-status', (el) => el.dataset.layers), '2');
    await analysedAfter(page, 0);

    // SmolLM2 from the hub: its tokenizer.json, and a checkpoint in two shards named by model.safetensors.index.json.
    const { config: llamaConfig, tokenizer, bytes: llamaBytes } = llamaFiles();
    const { readSafetensors } = await import('../../bindings/models/safetensors.mjs');
    const all = [...readSafetensors(llamaBytes).tensors];
    const shardOf = (part) => writeSafetensors(Object.fromEntries(all.filter((_, i) => i % 2 === part)
      .map(([n, t]) => [n, { shape: t.shape, data: t.data }])));
    const shards = { 'model-00001-of-00002.safetensors': shardOf(0), 'model-00002-of-00002.safetensors': shardOf(1) };
    const index = { weight_map: Object.fromEntries(all.map(([n], i) => [n, Object.keys(shards)[i % 2]])) };
    const llamaServed = [];
    await page.route((url) => url.pathname.startsWith('/test-hub/HuggingFaceTB/'), (route) => {
      const name = route.request().url().split('/').pop();
      llamaServed.push(name);
      const body = { 'config.json': JSON.stringify(llamaConfig), 'tokenizer.json': JSON.stringify(tokenizer),
        'model.safetensors.index.json': JSON.stringify(index) }[name] ?? shards[name];
      return body ? route.fulfill({ body: Buffer.from(body) }) : route.fulfill({ status: 404, body: 'not found' });
    });
    await page.selectOption('#model-hub-name', { label: 'SmolLM2-135M' });
    await page.click('#model-hub-load');
    await page.waitForSelector('#model-status[data-model-type="llama"][data-loaded="true"]', { timeout: 60000 });
    assert.deepEqual(llamaServed, ['config.json', 'tokenizer.json', 'model.safetensors.index.json', ...Object.keys(shards)]);

    // A truncated file: a visible message, the loaded model kept.
    await page.setInputFiles('#model-files', [
      { name: 'config.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(CONFIG)) },
      { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from(bytes.subarray(0, 1000)) },
    ]);
    await page.waitForSelector('#model-status[data-error="true"]');
    const message = await page.textContent('#model-status');
    assert.match(message, /Could not load the model: .*(runs past the end of the file|data_offsets)/);
    assert.ok(await page.isVisible('#model-status'));
    // Only config.json: says what is missing.
    await page.setInputFiles('#model-files', [{ name: 'config.json', mimeType: 'application/json', buffer: Buffer.from('{}') }]);
    await page.waitForFunction(() => /no \.safetensors file/.test(document.getElementById('model-status').textContent));
    assert.deepEqual(problems.filter((p) => !p.includes('404')), []);
    await page.close();
  });
});
});
