! Example: a Fortran program that sums an array over all ranks with symcoll.
!
!   gfortran allreduce.f90 $(pkg-config --cflags --libs symcoll-fortran) -o allreduce
!   symcoll_run -n 4 ./allreduce          (or mpirun -np 4 ./allreduce)
!
! Rank r contributes r + mod(i, 7) to element i; every rank checks the sum and prints
! "rank R: PASS" or "rank R: FAIL". Without an ierr argument, a failed call would end
! the program with a message (ERROR STOP).
program allreduce
    use, intrinsic :: iso_fortran_env, only: real64
    use symcoll
    implicit none

    integer, parameter :: n = 100003
    real(real64), allocatable :: x(:), sum(:)
    type(symcoll_comm) :: comm
    integer :: rank, nranks, i, ierr, wrong

    call symcoll_comm_create(comm)
    call symcoll_comm_rank(comm, rank)
    call symcoll_comm_size(comm, nranks)

    allocate (x(n), sum(n))
    x = [(real(rank + mod(i, 7), real64), i = 1, n)]
    call symcoll_allreduce(x, sum, n, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
    if (ierr /= SYMCOLL_OK) then
        write (*, '(a,i0,a,a)') 'rank ', rank, ': symcoll_allreduce: ', &
            symcoll_status_string(ierr)
        error stop 1
    end if

    wrong = 0
    do i = 1, n
        if (sum(i) /= nranks * (nranks - 1) / 2 + nranks * mod(i, 7)) wrong = wrong + 1
    end do
    call symcoll_comm_destroy(comm)
    deallocate (x, sum)
    if (wrong /= 0) then
        write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAIL (', wrong, ' wrong elements)'
        error stop 1
    end if
    write (*, '(a,i0,a,i0,a,a)') 'rank ', rank, ': PASS (', nranks, ' ranks, symcoll ', &
        symcoll_version_string() // ')'
end program allreduce
