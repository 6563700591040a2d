/**
 * The panel's line chart: one GPU's last minutes as three lines on a 0-100 % scale (memory in
 * use and this notebook's reserved memory as shares of the GPU's memory, and utilisation).
 * Plain SVG: three paths redrawn on each reply need no chart library.
 */
import { HISTORY_MS, ISample, MIN_SPAN_MS } from './poller';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 300;
const HEIGHT = 100;

/** The lines, with the class each path carries (style/index.css colours them). */
export const SERIES: {
  key: string;
  label: string;
  percent: (s: ISample) => number | null;
}[] = [
  {
    key: 'used',
    label: 'memory in use',
    percent: s => (s.used !== null && s.total ? (100 * s.used) / s.total : null)
  },
  {
    key: 'reserved',
    label: 'this notebook reserved',
    percent: s => (s.reserved !== null && s.total ? (100 * s.reserved) / s.total : null)
  },
  { key: 'utilization', label: 'utilisation', percent: s => s.utilization }
];

/** A path through the samples; a sample without the value breaks the line. */
function path(
  samples: ISample[],
  percent: (s: ISample) => number | null,
  now: number,
  span: number
): [string, number] {
  const start = now - span;
  let d = '';
  let points = 0;
  let pen = false;
  for (const s of samples) {
    const p = percent(s);
    if (p === null || !Number.isFinite(p)) {
      pen = false;
      continue;
    }
    const x = (((s.at - start) / span) * WIDTH).toFixed(1);
    const y = (HEIGHT - (Math.min(Math.max(p, 0), 100) / 100) * HEIGHT).toFixed(1);
    d += `${pen ? 'L' : 'M'}${x} ${y} `;
    pen = true;
    points += 1;
  }
  return [d.trim(), points];
}

/** The span the chart shows: its history, at least a minute, at most HISTORY_MS. */
export function span(samples: ISample[], now: number): number {
  const oldest = samples.length > 0 ? samples[0].at : now;
  return Math.min(HISTORY_MS, Math.max(MIN_SPAN_MS, now - oldest));
}

function describe(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds < 120 ? `${seconds} s` : `${Math.round(seconds / 60)} min`;
}

/** The chart of `samples` as of `now`. */
export function chart(samples: ISample[], now: number): Element {
  const shown = span(samples, now);
  const figure = document.createElement('figure');
  figure.className = 'tchbook-GpuChart';
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${WIDTH} ${HEIGHT}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `GPU memory and utilisation, the last ${describe(shown)}`);
  for (const level of [25, 50, 75]) {
    const line = document.createElementNS(SVG, 'line');
    line.setAttribute('class', 'tchbook-GpuChart-grid');
    line.setAttribute('x1', '0');
    line.setAttribute('x2', String(WIDTH));
    line.setAttribute('y1', String(HEIGHT - level));
    line.setAttribute('y2', String(HEIGHT - level));
    svg.appendChild(line);
  }
  for (const series of SERIES) {
    const [d, points] = path(samples, series.percent, now, shown);
    const line = document.createElementNS(SVG, 'path');
    line.setAttribute('class', `tchbook-GpuChart-line tchbook-GpuChart-${series.key}`);
    line.setAttribute('d', d);
    line.setAttribute('data-points', String(points));
    svg.appendChild(line);
  }
  figure.appendChild(svg);
  const legend = document.createElement('figcaption');
  for (const series of SERIES) {
    const item = document.createElement('span');
    item.className = `tchbook-GpuChart-key tchbook-GpuChart-${series.key}`;
    item.textContent = series.label;
    legend.appendChild(item);
  }
  const caption = document.createElement('span');
  caption.className = 'tchbook-GpuChart-span';
  caption.textContent = `last ${describe(shown)}, 0–100 %`;
  legend.appendChild(caption);
  figure.appendChild(legend);
  return figure;
}
