// Keeping a Learn run: the whole run (settings, the model's state dict,
// AdamW's state dict, the step, the losses) as one record in IndexedDB, so
// that a reload continues it exactly; and the model's state dict as JSON
// under PyTorch's names, to download, upload, or load in Node or PyTorch.
// No DOM: the training worker saves and restores, the Node tests call the
// record functions directly.

const DB = 'causal-attention-learn';
const STORE = 'runs';
const KEY = 'current';

/** What a trainer's run is now, as plain data (copies): { settings, model, optimizer, step, losses }. */
export function runRecord(trainer) {
  return {
    settings: { ...trainer.settings },
    model: trainer.model.net.stateDict(),
    optimizer: trainer.optimizer.stateDict(),
    step: trainer.step,
    losses: Float32Array.from(trainer.losses),
  };
}

/**
 * Puts a record (runRecord's, or one that went through structured clone or
 * JSON) into a new trainer built with the record's settings: its weights,
 * its optimizer state, its step and losses. The batches are a function of
 * the step, so training goes on as if it had never stopped.
 */
export function restoreRun(trainer, record) {
  // All or nothing: each load checks everything first; if the optimizer's
  // refuses after the model's went in, the model goes back to its fresh weights.
  const fresh = trainer.model.net.stateDict();
  trainer.model.net.loadStateDict(record.model);
  try {
    trainer.optimizer.loadStateDict(record.optimizer);
  } catch (error) {
    trainer.model.net.loadStateDict(fresh);
    throw error;
  }
  trainer.step = record.step;
  trainer.losses = Array.from(record.losses);
}

/**
 * A state dict as JSON text: PyTorch's names; each weight as rows of
 * `columns` numbers (every weight of the Learn model has d_model columns:
 * embeddings [rows, d], projections [out, d]), so that PyTorch's
 * `torch.tensor(value)` has the right shape; biases and sinks flat.
 */
export function stateDictJSON(dict, columns) {
  const out = {};
  for (const [name, values] of Object.entries(dict)) {
    const flat = Array.from(values);
    out[name] = name.endsWith('weight') && flat.length % columns === 0 && flat.length > columns
      ? Array.from({ length: flat.length / columns }, (_, r) => flat.slice(r * columns, (r + 1) * columns))
      : flat;
  }
  return JSON.stringify(out);
}

// ---------------------------------------------------------------- IndexedDB

function open() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE);
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function transact(mode, act) {
  const db = await open();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const request = act(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(request.result);
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

/** Saves the run record (replacing the one saved before). */
export const saveRun = (record) => transact('readwrite', (store) => store.put(record, KEY));

/** The saved run record, or null (none, or no IndexedDB here). */
export async function loadRun() {
  if (typeof indexedDB === 'undefined') return null;
  return (await transact('readonly', (store) => store.get(KEY))) ?? null;
}
