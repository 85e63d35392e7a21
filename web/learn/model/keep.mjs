// The training worker's keeping of a run: the checkpoints the
// page's slider scrubs through (learn-checkpoints.mjs), the run saved to
// IndexedDB as it trains and restored after a reload, the model's state
// dict as JSON both ways (learn-persist.mjs), and a head for the page's
// pipeline panels (learn-pipeline.mjs). learn-worker.mjs calls it at
// the points named; it talks to the page through `post` (the worker's, which
// adds the run number). No DOM.

import { Checkpoints, snapshot, withParams } from './checkpoints.mjs';
import { loadRun, restoreRun, runRecord, saveRun, stateDictJSON } from './persist.mjs';
import { headInPipeline } from './head-pipeline.mjs';
import { runLab } from './lab.mjs';

/** Least time between two saves while training. */
const SAVE_MS = 2000;

/** Whether two settings objects hold the same values (key order aside). */
function sameSettings(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => JSON.stringify(a[k]) === JSON.stringify(b[k]));
}

export class Keeper {
  constructor(post) {
    this.post = post;
    /** The run found in IndexedDB at start, until a configure uses it or not. */
    this.saved = null;
    this.checkpoints = null;
    this.lastSave = 0;
    this.saving = null; // the save under way (one at a time)
    this.again = null; // the trainer to save once it is done
  }

  /** Reads the saved run (at start); returns its settings, or null. */
  async load() {
    try {
      this.saved = await loadRun();
    } catch {
      this.saved = null;
    }
    return this.saved?.settings ?? null;
  }

  /**
   * A new run: with `restore` and a saved run of the same settings, the
   * trainer continues it; then its first checkpoint and a save.
   */
  configure(trainer, restore) {
    const saved = this.saved;
    this.saved = null;
    if (restore && saved && sameSettings(saved.settings, trainer.settings)) {
      try {
        restoreRun(trainer, saved);
      } catch (error) {
        // A record this version cannot read: the run starts afresh, and says why.
        this.post({ type: 'keep-error', message: `The saved run could not be restored: ${error.message}` });
      }
    }
    const { layers, heads } = trainer.settings;
    this.checkpoints = new Checkpoints((layers * heads * trainer.tokens * trainer.tokens + trainer.model.parameterCount()) * 4);
    this.afterStep(trainer, true);
    this.save(trainer);
  }

  /** After each step: a checkpoint when one is due (or `force`d), and the page told. */
  afterStep(trainer, force = false) {
    if (!force && !this.checkpoints.due(trainer.step)) return;
    this.checkpoints.add(snapshot(trainer));
    this.post({ type: 'checkpoints', summary: this.checkpoints.summary() });
  }

  /** While training: a save when the last is SAVE_MS old. */
  autosave(trainer) {
    if (performance.now() - this.lastSave >= SAVE_MS) this.save(trainer);
  }

  /** Saves the run to IndexedDB (after the save under way, if any); the page hears 'saved' { step }. */
  save(trainer) {
    this.lastSave = performance.now();
    if (typeof indexedDB === 'undefined') return;
    if (this.saving) {
      this.again = trainer;
      return;
    }
    const record = runRecord(trainer);
    this.saving = saveRun(record).then(() => this.post({ type: 'saved', step: record.step }),
      (error) => this.post({ type: 'keep-error', message: `The run could not be saved: ${error?.message ?? error}` }))
      .finally(() => {
        this.saving = null;
        const next = this.again;
        this.again = null;
        if (next) this.save(next);
      });
  }

  /** The page's keeping messages; true when `message` was one. */
  handle(message, trainer) {
    switch (message.type) {
      case 'checkpoint': {
        const c = this.checkpoints.list[message.index];
        if (c) {
          const { params: _, ...shown } = c; // the page shows the weights and scores
          this.post({ type: 'checkpoint', index: message.index, ...shown });
        }
        return true;
      }
      case 'pipeline':
        this.post({ type: 'pipeline', result: headInPipeline(trainer, message.layer, message.head) });
        return true;
      case 'lab': {
        // At a checkpoint (the slider's): its parameters for the lab's time.
        const c = message.index === undefined ? null : this.checkpoints.list[message.index];
        const result = c ? withParams(trainer, c.params, () => runLab(trainer, { head: message.head }))
          : runLab(trainer, { head: message.head });
        this.post({ type: 'lab', index: c ? message.index : null, result: { ...result, step: c ? c.step : trainer.step } });
        return true;
      }
      case 'state-dict':
        this.post({ type: 'state-dict', json: stateDictJSON(trainer.model.net.stateDict(), trainer.settings.dModel) });
        return true;
      case 'load-state-dict':
        try {
          trainer.model.net.loadStateDict(message.dict);
        } catch (error) {
          this.post({ type: 'keep-error', message: `The state dict was not loaded: ${error.message}` });
          return true;
        }
        this.post({ type: 'loaded' });
        this.save(trainer);
        return true;
      default:
        return false;
    }
  }
}
