/**
 * Asks the current notebook's kernel for its usage every few seconds and keeps the last minutes
 * of answers, for the status bar item and the panel, which redraw on `changed`.
 *
 * One request at a time: a kernel that does not answer is asked again only after the previous
 * request gave up, so requests never pile up behind a stuck kernel. The control channel answers
 * while a cell runs (tchbook and ipykernel serve it apart from the cell), which is what lets the
 * chart keep drawing during training.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { ISignal, Signal } from '@lumino/signaling';
import { IGpu, UsageState, askUsage, readReply } from './usage';

/** How often the kernel is asked. */
export const POLL_MS = 2_000;
/** How many times less often a kernel without `gpus` in its reply is asked. */
const NO_GPUS_POLL_FACTOR = 5;
/** How much history the chart keeps. */
export const HISTORY_MS = 5 * 60_000;
/** The chart's narrowest span: it widens with its history up to HISTORY_MS. */
export const MIN_SPAN_MS = 60_000;

/** One GPU at one moment. */
export interface ISample {
  at: number;
  used: number | null;
  total: number | null;
  reserved: number | null;
  utilization: number | null;
}

export class UsagePoller {
  constructor(private readonly pollMs = POLL_MS) {}

  get state(): UsageState {
    return this._state;
  }

  /** Per GPU index, its samples, oldest first. */
  get history(): ReadonlyMap<number, ISample[]> {
    return this._history;
  }

  /** GPUs an earlier reply had and the last one lacks: index → name. */
  get vanished(): ReadonlyMap<number, string> {
    return this._vanished;
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Follows another notebook's session (or none). */
  follow(session: ISessionContext | null): void {
    if (session === this._session) {
      return;
    }
    this._session?.kernelChanged.disconnect(this._restart, this);
    this._session = session;
    session?.kernelChanged.connect(this._restart, this);
    this._restart();
  }

  dispose(): void {
    this.follow(null);
    clearTimeout(this._timer);
    Signal.clearData(this);
  }

  private _restart(): void {
    this._generation += 1;
    clearTimeout(this._timer);
    this._history = new Map();
    this._vanished = new Map();
    this._names = new Map();
    this._set(this._session ? { kind: 'waiting' } : { kind: 'no-kernel' });
    if (this._session) {
      void this._tick(this._generation);
    }
  }

  private async _tick(generation: number): Promise<void> {
    const kernel = this._session?.session?.kernel;
    if (!kernel || kernel.isDisposed || kernel.status === 'dead') {
      this._set({ kind: 'no-kernel' });
    } else if (kernel.connectionStatus === 'connected') {
      let next: UsageState;
      const at = Date.now();
      try {
        const content = await askUsage(kernel);
        next = readReply(content, this._session?.kernelDisplayName ?? '', at);
      } catch (error) {
        next = {
          kind: 'failed',
          message: `the kernel did not answer usage_request: ${(error as Error).message}`,
          at
        };
      }
      if (generation !== this._generation) {
        return; // another kernel meanwhile
      }
      this._record(next);
      this._set(next);
    }
    if (generation === this._generation) {
      // A kernel that reports no GPUs is asked less often: it may still start reporting them
      // (a Python notebook once `%load_ext tchbook` has started its Rust kernel).
      const wait = this._state.kind === 'no-gpus' ? NO_GPUS_POLL_FACTOR * this.pollMs : this.pollMs;
      this._timer = setTimeout(() => void this._tick(generation), wait);
    }
  }

  private _record(state: UsageState): void {
    if (state.kind === 'none-seen') {
      // Every GPU seen before is gone (NVML fails, or the driver went away).
      for (const [index, name] of this._names) {
        this._vanished.set(index, name);
      }
      return;
    }
    if (state.kind !== 'gpus') {
      return;
    }
    const seen = new Set<number>();
    for (const gpu of state.gpus) {
      seen.add(gpu.index);
      this._names.set(gpu.index, gpu.name);
      this._vanished.delete(gpu.index);
      const samples = this._history.get(gpu.index) ?? [];
      samples.push(sample(gpu, state.at));
      while (samples.length > 0 && samples[0].at < state.at - HISTORY_MS) {
        samples.shift();
      }
      this._history.set(gpu.index, samples);
    }
    for (const [index, name] of this._names) {
      if (!seen.has(index)) {
        this._vanished.set(index, name);
      }
    }
  }

  private _set(state: UsageState): void {
    this._state = state;
    this._changed.emit();
  }

  private _session: ISessionContext | null = null;
  private _state: UsageState = { kind: 'no-kernel' };
  private _history = new Map<number, ISample[]>();
  private _vanished = new Map<number, string>();
  private _names = new Map<number, string>();
  private _timer: ReturnType<typeof setTimeout> | undefined;
  private _generation = 0;
  private _changed = new Signal<this, void>(this);
}

function sample(gpu: IGpu, at: number): ISample {
  return {
    at,
    used: gpu.memoryUsed,
    total: gpu.memoryTotal,
    reserved: gpu.allocator?.reserved ?? null,
    utilization: gpu.utilization
  };
}
