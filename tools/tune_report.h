/* symcoll_tune's measurements and what it reports of them beyond the tuning file: a CSV
 * of every measured point and a plot of it (matplotlib, through python3). */
#ifndef SYMCOLL_TOOLS_TUNE_REPORT_H
#define SYMCOLL_TOOLS_TUNE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#define TUNE_MAX_CAND 8

extern const char *const tune_cand_names[];
extern const char *const tune_coll_names[]; /* as tuning files name them */

/* One collective at one plan size: the candidates' times over the rounds, the slowest
 * rank's (every rank holds the same numbers). */
typedef struct tune_result {
    int coll;
    int mem; /* symcoll_mem_type_t */
    size_t bytes;
    int ncand;
    int cand[TUNE_MAX_CAND];  /* indices into tune_cand_names */
    double us[TUNE_MAX_CAND]; /* median over the rounds; < 0: not measured */
    double lo[TUNE_MAX_CAND]; /* fastest and slowest round */
    double hi[TUNE_MAX_CAND];
    int best, next; /* the chosen candidate and the runner-up, or -1 */
    int noisy;      /* the winner's rounds spread more than the margin */
} tune_result_t;

/* Writes every measured point as CSV lines "collective,memory,bytes,algorithm,median_us,
 * min_us,max_us,chosen" after a header line. */
void tune_write_csv(FILE *f, const tune_result_t *res, int nres);

/* Draws the points into png (time per call against size, one panel per collective
 * and memory type, the
 * rounds' spread as error bars, the chosen algorithm circled) with python3 and matplotlib.
 * 0 when drawn; -1 with a message on stderr when no python3 with matplotlib is found or
 * drawing failed (the tuning file does not depend on it). */
int tune_plot(const char *png, const char *title, const tune_result_t *res, int nres);

#endif
