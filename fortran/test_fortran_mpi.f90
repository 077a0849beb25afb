! Test of 'use symcoll_mpi' under mpirun: a communicator bootstrapped through
! MPI_Allgather on a duplicate of MPI_COMM_WORLD, an all-reduce checked exactly, and a
! destroy that frees the duplicate (MPI_Finalize would complain about nothing else).
program test_fortran_mpi
    use, intrinsic :: iso_fortran_env, only: real64
    use mpi_f08
    use symcoll
    use symcoll_mpi
    implicit none

    integer, parameter :: n = 4099
    real(real64) :: x(n), y(n)
    type(symcoll_comm) :: comm
    integer :: rank, nranks, srank, ierr, i, wrong

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks)
    call symcoll_comm_create_mpi(comm, MPI_COMM_WORLD, ierr)
    if (ierr /= SYMCOLL_OK) then
        write (*, '(a,i0,a,a)') 'rank ', rank, ': symcoll_comm_create_mpi: ', &
            symcoll_status_string(ierr)
        call MPI_Abort(MPI_COMM_WORLD, 1)
    end if
    call symcoll_comm_rank(comm, srank)
    x = [(real(rank * 3 + mod(i, 5), real64), i = 1, n)]
    call symcoll_allreduce(x, y, n, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm)
    wrong = 0
    do i = 1, n
        if (y(i) /= 3 * nranks * (nranks - 1) / 2 + nranks * mod(i, 5)) wrong = wrong + 1
    end do
    if (srank /= rank) wrong = wrong + 1
    call symcoll_comm_destroy(comm)
    call MPI_Finalize()
    if (wrong /= 0) then
        write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAIL (', wrong, ' wrong)'
        error stop 1
    end if
    write (*, '(a,i0,a)') 'rank ', rank, ': PASS'
end program test_fortran_mpi
