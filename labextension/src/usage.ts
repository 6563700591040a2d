/**
 * The question and its answers: `usage_request` on the kernel's control channel, the request
 * jupyter-resource-usage's Kernel Usage panel sends (ipykernel answers it from 6.9 on, tchbook
 * adds `gpus`), sent here through the kernel connection JupyterLab already holds, so the server
 * needs nothing new; and the reply read leniently into a state the views can always draw.
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';

/** This notebook's CUDA caching allocator on one GPU (bytes). */
export interface IAllocator {
  allocated: number;
  reserved: number;
  peak: number | null;
}

/** One GPU of a reply, every field checked. */
export interface IGpu {
  index: number;
  name: string;
  memoryUsed: number | null;
  memoryTotal: number | null;
  utilization: number | null;
  allocator: IAllocator | null;
  driver: string | null;
  cuda: string | null;
  /** What went wrong reading this GPU (an NVML error, a field the reply lacks). */
  problem: string | null;
}

/** What the views draw. */
export type UsageState =
  | { kind: 'waiting' }
  | { kind: 'no-kernel' }
  /** The reply has no `gpus`: ipykernel, or any kernel that does not report GPUs. */
  | { kind: 'no-gpus'; kernelName: string }
  /** `gpus` is there and empty: the kernel sees no GPU. */
  | { kind: 'none-seen'; kernelName: string }
  | { kind: 'gpus'; gpus: IGpu[]; at: number }
  /** No usable reply: the kernel did not answer in time, or answered something unreadable. */
  | { kind: 'failed'; message: string; at: number };

/** How long a reply may take; jupyter-resource-usage waits as long. */
export const REPLY_TIMEOUT_MS = 10_000;

/**
 * Asks `kernel` once; resolves with the reply's content, or rejects with a sentence saying what
 * went wrong. Never throws synchronously.
 */
export async function askUsage(
  kernel: Kernel.IKernelConnection,
  timeoutMs = REPLY_TIMEOUT_MS
): Promise<Record<string, unknown>> {
  // `usage_request` is not in the protocol's specification, so not in the message types
  // @jupyterlab/services spells; the message is built the same way as any control request.
  const msg = KernelMessage.createMessage({
    msgType: 'usage_request' as any,
    channel: 'control',
    session: kernel.clientId,
    username: kernel.username,
    content: {}
  }) as any;
  const future = kernel.sendControlMessage(msg, true, true);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer in ${timeoutMs / 1000} s`)),
      timeoutMs
    );
  });
  try {
    const reply = (await Promise.race([future.done, late])) as any;
    const content = reply?.content;
    if (typeof content !== 'object' || content === null) {
      throw new Error('the reply has no content');
    }
    return content as Record<string, unknown>;
  } finally {
    clearTimeout(timer);
    if (!future.isDisposed) {
      future.dispose();
    }
  }
}

const isCount = (v: unknown): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0;

function readAllocator(value: unknown): IAllocator | null {
  if (typeof value !== 'object' || value === null) {
    return null;
  }
  const a = value as Record<string, unknown>;
  if (!isCount(a.allocated) || !isCount(a.reserved)) {
    return null;
  }
  return {
    allocated: a.allocated,
    reserved: a.reserved,
    peak: isCount(a.peak) ? a.peak : null
  };
}

/** One entry of `gpus`, whatever it holds: what is missing is said, not shown as zero. */
export function readGpu(value: unknown, position: number): IGpu {
  const g =
    typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : {};
  const missing: string[] = [];
  const count = (key: string): number | null => {
    if (isCount(g[key])) {
      return g[key] as number;
    }
    missing.push(key);
    return null;
  };
  const index = isCount(g.index) ? (g.index as number) : position;
  const memoryUsed = count('memory_used');
  const memoryTotal = count('memory_total');
  const text = (key: string): string | null =>
    typeof g[key] === 'string' && g[key] !== '' ? (g[key] as string) : null;
  let problem = text('error');
  if (!problem && missing.length > 0) {
    problem = `the reply lacks ${missing.join(' and ')}`;
  }
  return {
    index,
    name: text('name') ?? `GPU ${index}`,
    memoryUsed,
    memoryTotal: memoryTotal === 0 ? null : memoryTotal,
    utilization: isCount(g.utilization) ? (g.utilization as number) : null,
    allocator: readAllocator(g.allocator),
    driver: text('driver'),
    cuda: text('cuda'),
    problem
  };
}

/** A reply's content as a state. */
export function readReply(
  content: Record<string, unknown>,
  kernelName: string,
  at: number
): UsageState {
  if (!('gpus' in content)) {
    return { kind: 'no-gpus', kernelName };
  }
  const gpus = content.gpus;
  if (!Array.isArray(gpus)) {
    return {
      kind: 'failed',
      message: `the kernel's usage_reply has a "gpus" that is not a list`,
      at
    };
  }
  if (gpus.length === 0) {
    return { kind: 'none-seen', kernelName };
  }
  return { kind: 'gpus', gpus: gpus.map(readGpu), at };
}

/** Bytes as people read them: 1.5 GiB. */
export function bytes(n: number | null): string {
  if (n === null) {
    return '–';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value >= 100 || unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}
