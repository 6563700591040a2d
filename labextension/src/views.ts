/**
 * The two views of one poller: the status bar item (one line per GPU) and the side panel (each
 * GPU's figures, name, driver and CUDA version, and its chart). Both are plain DOM, every text
 * from the kernel set as text, never as markup.
 */
import { Widget } from '@lumino/widgets';
import { chart } from './chart';
import { UsagePoller } from './poller';
import { IGpu, UsageState, bytes } from './usage';

const percent = (n: number | null): string => (n === null ? '–' : `${Math.round(n)}%`);

/** What the status bar says of one GPU: `GPU0 3.0 GiB/80 GiB 42% · nb 1.0/2.0 GiB`. */
export function statusText(gpu: IGpu): string {
  if (gpu.problem) {
    return `GPU${gpu.index} ⚠ ${gpu.problem}`;
  }
  let text = `GPU${gpu.index} ${bytes(gpu.memoryUsed)}/${bytes(gpu.memoryTotal)} ${percent(gpu.utilization)}`;
  if (gpu.allocator) {
    text += ` · nb ${bytes(gpu.allocator.allocated)}/${bytes(gpu.allocator.reserved)}`;
  }
  return text;
}

/** Whether the status bar shows anything: only for a kernel that reports GPUs. */
export function statusShown(state: UsageState): boolean {
  return state.kind === 'gpus' || state.kind === 'failed';
}

/** A widget that redraws whenever its poller has news. */
abstract class UsageView extends Widget {
  constructor(protected readonly poller: UsagePoller, className: string) {
    super();
    this.addClass(className);
    poller.changed.connect(this.draw, this);
  }

  protected abstract draw(): void;
}

export class GpuStatus extends UsageView {
  constructor(poller: UsagePoller) {
    super(poller, 'tchbook-GpuStatus');
    this.node.title = 'GPU memory in use / total, utilisation, and this notebook\'s allocator (allocated/reserved)';
    this.draw();
  }

  protected draw(): void {
    const state = this.poller.state;
    if (state.kind === 'gpus') {
      this.node.textContent = state.gpus.map(statusText).join('  |  ');
      this.node.dataset.state = 'gpus';
    } else if (state.kind === 'failed') {
      this.node.textContent = 'GPU: no answer';
      this.node.dataset.state = 'failed';
    } else {
      this.node.textContent = '';
      this.node.dataset.state = state.kind;
    }
  }
}

function element(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function message(state: UsageState): string | null {
  switch (state.kind) {
    case 'no-kernel':
      return 'No kernel: open a notebook, and its kernel\'s GPUs show here.';
    case 'waiting':
      return 'Asking the kernel…';
    case 'no-gpus':
      return `This kernel reports no GPUs: ${state.kernelName || 'it'} answers usage_request without a "gpus" list.`;
    case 'none-seen':
      return 'The kernel sees no GPU (no NVIDIA driver where it runs, or no cell has run yet).';
    case 'failed':
      return `⚠ ${state.message}. The figures below are the last it gave.`;
    default:
      return null;
  }
}

function card(gpu: IGpu, poller: UsagePoller, now: number): HTMLElement {
  const node = element('section', 'tchbook-GpuCard');
  node.dataset.gpu = String(gpu.index);
  node.appendChild(element('h3', 'tchbook-GpuCard-name', `GPU ${gpu.index} · ${gpu.name}`));
  const versions = [gpu.driver && `driver ${gpu.driver}`, gpu.cuda && `CUDA ${gpu.cuda}`].filter(Boolean);
  if (versions.length > 0) {
    node.appendChild(element('div', 'tchbook-GpuCard-versions', versions.join(' · ')));
  }
  if (gpu.problem) {
    node.appendChild(element('div', 'tchbook-GpuCard-problem', `⚠ ${gpu.problem}`));
  }
  const rows: [string, string, string][] = [
    ['memory', 'memory in use', `${bytes(gpu.memoryUsed)} of ${bytes(gpu.memoryTotal)}`],
    ['utilization', 'utilisation', percent(gpu.utilization)],
    [
      'allocator',
      'this notebook',
      gpu.allocator
        ? `${bytes(gpu.allocator.allocated)} allocated, ${bytes(gpu.allocator.reserved)} reserved`
        : 'no CUDA memory of its own here'
    ]
  ];
  const table = element('dl', 'tchbook-GpuCard-figures');
  for (const [key, label, value] of rows) {
    const term = element('dt', '', label);
    const figure = element('dd', `tchbook-GpuCard-${key}`, value);
    table.append(term, figure);
  }
  node.appendChild(table);
  node.appendChild(chart(poller.history.get(gpu.index) ?? [], now));
  return node;
}

export class GpuPanel extends UsageView {
  constructor(poller: UsagePoller) {
    super(poller, 'tchbook-GpuPanel');
    this.id = 'tchbook-gpu-panel';
    this.title.caption = 'GPUs of this notebook\'s kernel';
    this.draw();
  }

  protected draw(): void {
    const state = this.poller.state;
    this.node.dataset.state = state.kind;
    this.node.replaceChildren(element('h2', 'tchbook-GpuPanel-title', 'GPUs'));
    const text = message(state);
    if (text) {
      this.node.appendChild(element('p', `tchbook-GpuPanel-message tchbook-GpuPanel-${state.kind}`, text));
    }
    const now = Date.now();
    if (state.kind === 'gpus') {
      for (const gpu of state.gpus) {
        this.node.appendChild(card(gpu, this.poller, now));
      }
    } else if (state.kind === 'failed') {
      for (const [index, samples] of this.poller.history) {
        const section = element('section', 'tchbook-GpuCard tchbook-mod-stale');
        section.append(element('h3', 'tchbook-GpuCard-name', `GPU ${index}`), chart(samples, now));
        this.node.appendChild(section);
      }
    }
    for (const [index, name] of this.poller.vanished) {
      this.node.appendChild(
        element('p', 'tchbook-GpuPanel-vanished', `⚠ GPU ${index} (${name}) is no longer in the kernel's reply.`)
      );
    }
  }
}
