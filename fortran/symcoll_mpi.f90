! Creation of a symcoll communicator over an MPI communicator ('use symcoll_mpi', library
! libsymcoll_mpi_f, built when MPI's mpi_f08 module works with the Fortran compiler).
!
! symcoll_comm_create_mpi() duplicates the MPI communicator and bootstraps symcoll
! through MPI_Allgather on the duplicate, so symcoll's exchanges never meet the
! program's own messages; symcoll_comm_destroy() frees the duplicate after the
! communicator (it is collective over the same ranks, as MPI_Comm_free is).
module symcoll_mpi
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit
    use mpi_f08
    use symcoll
    implicit none
    private
    public :: symcoll_comm_create_mpi

    !> what the allgather callback needs; lives until symcoll_comm_destroy()
    type :: oob_ctx
        type(MPI_Comm) :: comm
    end type oob_ctx

contains

    !> The out-of-band allgather of symcoll (symcoll_allgather_fn) over ctx's communicator.
    integer(c_int) function oob_allgather(src, dst, size, ctx) bind(c)
        type(c_ptr), value :: src, dst, ctx
        integer(c_size_t), value :: size
        type(oob_ctx), pointer :: c
        character(kind=c_char), pointer :: s(:), d(:)
        integer :: nranks, ierr

        oob_allgather = -1
        if (size > int(huge(0), c_size_t)) return
        call c_f_pointer(ctx, c)
        call MPI_Comm_size(c%comm, nranks, ierr)
        if (ierr /= MPI_SUCCESS) return
        call c_f_pointer(src, s, [size])
        call c_f_pointer(dst, d, [size * int(nranks, c_size_t)])
        call MPI_Allgather(s, int(size), MPI_BYTE, d, int(size), MPI_BYTE, c%comm, ierr)
        if (ierr == MPI_SUCCESS) oob_allgather = 0
    end function oob_allgather

    !> symcoll_comm%cleanup: frees the duplicate and the context
    subroutine oob_cleanup(ctx)
        type(c_ptr), intent(in) :: ctx
        type(oob_ctx), pointer :: c

        call c_f_pointer(ctx, c)
        call MPI_Comm_free(c%comm)
        deallocate (c)
    end subroutine oob_cleanup

    !> Creates a symcoll communicator over the ranks of the MPI communicator parent
    !> (collective over them): rank and size are parent's, the bootstrap is MPI_Allgather.
    !> cuda_device and timeout_sec are the fields of symcoll_comm_params_t.
    subroutine symcoll_comm_create_mpi(comm, parent, ierr, cuda_device, timeout_sec)
        type(symcoll_comm), intent(out) :: comm
        type(MPI_Comm), intent(in) :: parent
        integer, intent(out), optional :: ierr
        integer, intent(in), optional :: cuda_device
        real(c_double), intent(in), optional :: timeout_sec
        type(oob_ctx), pointer :: c
        procedure(symcoll_allgather_fn), pointer :: fn
        integer :: rank, nranks, merr, s

        ! through a pointer: c_funloc(oob_allgather) is a constant that gfortran puts in
        ! a read-only section, which needs a text relocation in a shared library
        fn => oob_allgather
        allocate (c)
        call MPI_Comm_dup(parent, c%comm, merr)
        if (merr == MPI_SUCCESS) call MPI_Comm_rank(c%comm, rank, merr)
        if (merr == MPI_SUCCESS) call MPI_Comm_size(c%comm, nranks, merr)
        if (merr /= MPI_SUCCESS) then
            deallocate (c)
            s = SYMCOLL_ERR_BOOTSTRAP
        else
            call symcoll_comm_create(comm, s, rank=rank, nranks=nranks, &
                                     cuda_device=cuda_device, timeout_sec=timeout_sec, &
                                     allgather=c_funloc(fn), &
                                     allgather_ctx=c_loc(c))
            if (s == SYMCOLL_OK) then
                comm%cleanup_ctx = c_loc(c)
                comm%cleanup => oob_cleanup
            else
                call MPI_Comm_free(c%comm)
                deallocate (c)
            end if
        end if
        if (present(ierr)) then
            ierr = s
        else if (s /= SYMCOLL_OK) then
            write (error_unit, '(a,a)') 'symcoll: symcoll_comm_create_mpi failed: ', &
                symcoll_status_string(s)
            error stop 'symcoll: error without ierr'
        end if
    end subroutine symcoll_comm_create_mpi

end module symcoll_mpi
