/*
 * A stand-in for the NVIDIA driver's NVML (libnvidia-ml.so.1) for tests on machines without a
 * GPU: it exports the NVML functions tchbook's prelude calls (prelude/src/cuda/nvml.rs), with
 * nvml.h's signatures, and answers from a script the test writes and rewrites while a kernel
 * runs. The kernel opens it only when a test names it in TCHBOOK_NVML_LIBRARY.
 *
 * Built by the tests with `cc -shared -fPIC -o DIR/libnvidia-ml.so.1 libnvidia-ml.c`.
 *
 * The script is the file named by TCHBOOK_FAKE_NVML_SCRIPT, read again at each
 * nvmlDeviceGetCount_v2 (the start of every question the prelude asks), so a test changes the
 * GPUs by replacing the file (write a new one and rename it over, so no read sees half of it).
 * One statement per line; `#` starts a comment:
 *
 *   driver 550.54.15                     nvmlSystemGetDriverVersion
 *   cuda 12040                           nvmlSystemGetCudaDriverVersion_v2 (12.4)
 *   count-error 999                      nvmlDeviceGetCount_v2 fails with this code
 *   gpu USED TOTAL UTIL NAME...          one GPU: bytes in use, bytes in all, percent busy
 *   lost NAME...                         a GPU that fell off the bus: its figures fail with
 *                                        NVML_ERROR_GPU_IS_LOST
 *
 * Without a script, or with an unreadable one, it reports no GPU.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16
#define NAME_LEN 96

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

struct gpu {
  int lost;
  unsigned long long used, total;
  unsigned int util;
  char name[NAME_LEN];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpu gpus[MAX_GPUS];
static unsigned int count;
static int count_error;
static char driver[80];
static int cuda;

/* `line` into `dst`, without its newline. */
static void rest(char *dst, size_t len, const char *line) {
  snprintf(dst, len, "%s", line);
  dst[strcspn(dst, "\r\n")] = 0;
}

static void read_script(void) {
  count = 0;
  count_error = 0;
  driver[0] = 0;
  cuda = 0;
  const char *path = getenv("TCHBOOK_FAKE_NVML_SCRIPT");
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    struct gpu g = {0};
    int used = 0;
    if (line[0] == '#') continue;
    if (sscanf(line, "driver %79s", driver) == 1) continue;
    if (sscanf(line, "cuda %d", &cuda) == 1) continue;
    if (sscanf(line, "count-error %d", &count_error) == 1) continue;
    if (count >= MAX_GPUS) continue;
    if (sscanf(line, "gpu %llu %llu %u %n", &g.used, &g.total, &g.util, &used) == 3 && used > 0) {
      rest(g.name, NAME_LEN, line + used);
      gpus[count++] = g;
    } else if (sscanf(line, "lost %n", &used) == 0 && used > 0) {
      g.lost = 1;
      rest(g.name, NAME_LEN, line + used);
      gpus[count++] = g;
    }
  }
  fclose(f);
}

/* A copy of the GPU a handle (the address of its slot) names, and its index. */
static int look_up(void *device, struct gpu *copy, unsigned int *index) {
  pthread_mutex_lock(&lock);
  struct gpu *g = device;
  int found = g >= gpus && g < gpus + count;
  if (found) {
    *copy = *g;
    *index = (unsigned int)(g - gpus);
  }
  pthread_mutex_unlock(&lock);
  return found ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

/* look_up, for a question about the GPU's figures, which a lost GPU cannot answer. */
static int figures(void *device, struct gpu *copy, unsigned int *index) {
  int code = look_up(device, copy, index);
  return code ? code : copy->lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
}

int nvmlInit_v2(void) { return NVML_SUCCESS; }
int nvmlShutdown(void) { return NVML_SUCCESS; }

const char *nvmlErrorString(int code) {
  switch (code) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned int *out) {
  pthread_mutex_lock(&lock);
  read_script();
  int code = count_error;
  if (!code) *out = count;
  pthread_mutex_unlock(&lock);
  return code;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
  pthread_mutex_lock(&lock);
  int code = index < count ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  if (!code) *device = &gpus[index];
  pthread_mutex_unlock(&lock);
  return code;
}

int nvmlDeviceGetName(void *device, char *name, unsigned int len) {
  struct gpu g;
  unsigned int index;
  int code = look_up(device, &g, &index);
  if (!code && strlen(g.name) + 1 > len) code = NVML_ERROR_INSUFFICIENT_SIZE;
  if (!code) strcpy(name, g.name);
  return code;
}

int nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *memory) {
  struct gpu g;
  unsigned int index;
  int code = figures(device, &g, &index);
  if (!code) {
    memory->used = g.used;
    memory->total = g.total;
    memory->free = g.total > g.used ? g.total - g.used : 0;
  }
  return code;
}

int nvmlDeviceGetUtilizationRates(void *device, nvmlUtilization_t *utilization) {
  struct gpu g;
  unsigned int index;
  int code = figures(device, &g, &index);
  if (!code) {
    utilization->gpu = g.util;
    utilization->memory = 0;
  }
  return code;
}

int nvmlDeviceGetPciInfo_v3(void *device, nvmlPciInfo_t *pci) {
  struct gpu g;
  unsigned int index;
  int code = figures(device, &g, &index);
  if (!code) {
    memset(pci, 0, sizeof *pci);
    pci->bus = index + 1;
    snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  }
  return code;
}

int nvmlSystemGetDriverVersion(char *version, unsigned int len) {
  pthread_mutex_lock(&lock);
  int code = !driver[0] ? NVML_ERROR_UNKNOWN
             : strlen(driver) + 1 > len ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
  if (!code) strcpy(version, driver);
  pthread_mutex_unlock(&lock);
  return code;
}

int nvmlSystemGetCudaDriverVersion_v2(int *version) {
  pthread_mutex_lock(&lock);
  int code = cuda > 0 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
  if (!code) *version = cuda;
  pthread_mutex_unlock(&lock);
  return code;
}
