/* symcoll_tune's CSV and plot (see tune_report.h). */
#define _GNU_SOURCE
#include "tune_report.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "symcoll.h"

const char *const tune_cand_names[] = {"oneshot", "twoshot", "ring", "rd", "hier", "rhd", NULL};
const char *const tune_coll_names[] = {"allreduce", "reduce_scatter", "allgather", "broadcast",
                                       NULL};

void tune_write_csv(FILE *f, const tune_result_t *res, int nres)
{
    fprintf(f, "collective,memory,bytes,algorithm,median_us,min_us,max_us,chosen\n");
    for (int i = 0; i < nres; i++) {
        const tune_result_t *r = &res[i];
        for (int a = 0; a < r->ncand; a++)
            if (r->us[a] >= 0)
                fprintf(f, "%s,%s,%zu,%s,%.3f,%.3f,%.3f,%d\n", tune_coll_names[r->coll],
                        r->mem == SYMCOLL_MEM_CUDA ? "cuda" : "host", r->bytes,
                        tune_cand_names[r->cand[a]], r->us[a], r->lo[a], r->hi[a],
                        a == r->best);
    }
}

/* Reads the CSV on stdin; argv: the PNG, the title. Exit status 3: no matplotlib. */
static const char plot_program[] =
    "import sys\n"
    "try:\n"
    "    import matplotlib\n"
    "except ImportError:\n"
    "    sys.exit(3)\n"
    "matplotlib.use('Agg')\n"
    "import matplotlib.pyplot as plt\n"
    "data = {}\n"
    "for line in sys.stdin.read().splitlines()[1:]:\n"
    "    c, m, b, a, med, lo, hi, ch = line.split(',')\n"
    "    data.setdefault((m, c), {}).setdefault(a, []).append(\n"
    "        (int(b), float(med), float(lo), float(hi), ch == '1'))\n"
    "if not data:\n"
    "    sys.exit('symcoll_tune: nothing to plot: one path at every size')\n"
    "# a row per memory type, a column per collective\n"
    "mems = list(dict.fromkeys(k[0] for k in data))\n"
    "colls = list(dict.fromkeys(k[1] for k in data))\n"
    "fig, axes = plt.subplots(len(mems), len(colls), squeeze=False,\n"
    "                         figsize=(4.6 * len(colls), 4.0 * len(mems)))\n"
    "for r, m in enumerate(mems):\n"
    "    for col, c in enumerate(colls):\n"
    "        ax = axes[r][col]\n"
    "        if (m, c) not in data:\n"
    "            ax.axis('off')\n"
    "            continue\n"
    "        for algo, pts in sorted(data[(m, c)].items()):\n"
    "            pts.sort()\n"
    "            xs = [p[0] for p in pts]\n"
    "            ys = [p[1] for p in pts]\n"
    "            err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]\n"
    "            bars = ax.errorbar(xs, ys, yerr=err, marker='o', ms=3, capsize=2, "
    "label=algo)\n"
    "            won = [p for p in pts if p[4]]\n"
    "            ax.plot([p[0] for p in won], [p[1] for p in won], 'o', mfc='none', ms=10,\n"
    "                    color=bars[0].get_color())\n"
    "        ax.set_xscale('log', base=2)\n"
    "        ax.set_yscale('log')\n"
    "        ax.set_title(c + ', ' + m, fontsize=10)\n"
    "        ax.set_xlabel('plan size (bytes)')\n"
    "        ax.grid(True, which='both', alpha=0.3)\n"
    "        ax.legend(fontsize=7)\n"
    "        if col == 0:\n"
    "            ax.set_ylabel('time per call, slowest rank (us); circled: chosen', "
    "fontsize=8)\n"
    "fig.suptitle(sys.argv[2], fontsize=8)\n"
    "fig.tight_layout()\n"
    "fig.savefig(sys.argv[1], dpi=100)\n";

/* Runs python with the program, feeding it the CSV; its exit status (127: no such
 * program), or -1. Spawned, not forked: the process may hold threads and registered
 * memory of UCX and CUDA, and the pipe's ends are close-on-exec. */
static int run_python(const char *python, const char *png, const char *title,
                      const tune_result_t *res, int nres)
{
    char *argv[] = {(char *)python, "-c",          (char *)plot_program,
                    (char *)png,    (char *)title, NULL};
    posix_spawn_file_actions_t fa;
    int fds[2], ws, rc;
    pid_t pid;
    FILE *f;
    void (*old)(int);

    if (pipe2(fds, O_CLOEXEC))
        return -1;
    if (posix_spawn_file_actions_init(&fa)) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    rc = posix_spawnp(&pid, python, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        close(fds[0]);
        close(fds[1]);
        return rc == ENOENT ? 127 : -1;
    }
    close(fds[0]);
    old = signal(SIGPIPE, SIG_IGN); /* python may end before reading everything */
    f = fdopen(fds[1], "w");
    if (f) {
        tune_write_csv(f, res, nres);
        fclose(f);
    } else {
        close(fds[1]);
    }
    signal(SIGPIPE, old);
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

int tune_plot(const char *png, const char *title, const tune_result_t *res, int nres)
{
    /* the python3 on PATH, else the system's (where Debian's python3-matplotlib lives) */
    static const char *const pythons[] = {"python3", "/usr/bin/python3"};
    int st = 127;

    for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]); i++) {
        st = run_python(pythons[i], png, title, res, nres);
        if (st == 0)
            return 0;
        if (st != 3 && st != 127)
            break; /* matplotlib is there and failed: its message is on stderr */
    }
    if (st == 3 || st == 127)
        fprintf(stderr,
                "symcoll_tune: no plot: %s (install python3-matplotlib on Debian/Ubuntu, or "
                "'pip install matplotlib'); --csv writes the points for another tool\n",
                st == 3 ? "python3 has no matplotlib" : "no python3");
    else
        fprintf(stderr, "symcoll_tune: drawing %s failed (status %d)\n", png, st);
    return -1;
}
