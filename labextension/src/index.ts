/**
 * tchbook's GPU panel for JupyterLab 4: the active notebook's kernel's GPUs, from the `gpus` list
 * of its `usage_reply`, in the status bar (one line per GPU) and in a side panel on the right
 * (figures, name, driver, CUDA version, and a chart of the last minutes).
 *
 * Modules: `usage` (the request and the reply, read leniently), `poller` (asks every few seconds,
 * keeps the history), `chart` (the SVG lines), `views` (the status bar item and the panel).
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';
import { UsagePoller } from './poller';
import { GpuPanel, GpuStatus, statusShown } from './views';

const gpuIcon = new LabIcon({
  name: 'tchbook-gpu-panel:gpu',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 6h18v12H3zM5 8v8h14V8zM7 10h4v4H7zm6 0h4v4h-4zM6 3h2v3H6zm5 0h2v3h-2zm5 0h2v3h-2zM6 18h2v3H6zm5 0h2v3h-2zm5 0h2v3h-2z"/>' +
    '</g></svg>'
});

/**
 * JupyterLab takes the kernel's busy/idle from every status message on iopub unless its parent's
 * type is "untracked"; a usage_request answered while a cell runs is followed by an `idle` that
 * would show the running notebook as idle. Kernel Usage's own polling has the same effect; this
 * front end's setting covers both. (The server keeps its own list, for culling.)
 */
function untrackUsageRequests(): void {
  let types: unknown = [];
  try {
    types = JSON.parse(PageConfig.getOption('untracked_message_types') || '[]');
  } catch {
    types = [];
  }
  const list = Array.isArray(types) ? types : [];
  if (!list.includes('usage_request')) {
    PageConfig.setOption('untracked_message_types', JSON.stringify([...list, 'usage_request']));
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tchbook-gpu-panel:plugin',
  description: "The notebook kernel's GPUs in the status bar and a side panel.",
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IStatusBar, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    statusBar: IStatusBar | null,
    labShell: ILabShell | null
  ) => {
    untrackUsageRequests();
    const poller = new UsagePoller();
    const follow = () => poller.follow(notebooks.currentWidget?.sessionContext ?? null);
    notebooks.currentChanged.connect(follow);
    follow();

    const panel = new GpuPanel(poller);
    panel.title.icon = gpuIcon;
    app.shell.add(panel, 'right', { rank: 1100 });

    if (statusBar) {
      const item = new GpuStatus(poller);
      item.node.addEventListener('click', () => {
        if (labShell) {
          labShell.activateById(panel.id);
        }
      });
      statusBar.registerStatusItem('tchbook-gpu-panel:status', {
        item,
        align: 'left',
        rank: 5,
        isActive: () => statusShown(poller.state),
        activeStateChanged: poller.changed
      });
    }
  }
};

export default plugin;
