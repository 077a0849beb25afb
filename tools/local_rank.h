/* The rank of this process among its node's, as the launchers tell it. */
#ifndef SYMCOLL_TOOLS_LOCAL_RANK_H
#define SYMCOLL_TOOLS_LOCAL_RANK_H

/* SYMCOLL_LOCAL_RANK (symcoll_run), OMPI_COMM_WORLD_LOCAL_RANK (Open MPI),
 * MPI_LOCALRANKID (MPICH), SLURM_LOCALID (srun), else the global SYMCOLL_RANK, else 0:
 * the tools' choice of a CUDA device is this modulo the devices seen. */
int tools_local_rank(void);

#endif
