! Fortran interface of symcoll ('use symcoll', library libsymcoll_f): the whole C API of
! symcoll.h through iso_c_binding, with Fortran-style wrappers.
!
! Conventions of the wrappers:
!  - every subroutine takes an optional 'ierr' (default integer) that receives the status
!    (SYMCOLL_OK or a negative SYMCOLL_ERR_*); without it, an error writes the status to
!    the error unit and ends the program with ERROR STOP, as Fortran's own statements do
!    without IOSTAT/STAT and MPI's mpi_f08 does with its default error handler;
!  - buffers are assumed-type, assumed-rank ('type(*), dimension(..)'): arrays of any
!    type, kind and rank, or scalars; they must be contiguous and hold count elements of
!    dtype, else SYMCOLL_ERR_INVALID_PARAM and nothing done. Types Fortran lacks
!    (float16, bfloat16, unsigned) are reduced from integer storage of the same size;
!  - in place is symcoll_allreduce_inplace() (Fortran forbids passing one array as two
!    arguments one of which is modified); memory from symcoll_mem_alloc() or CUDA memory
!    held as type(c_ptr) goes through symcoll_allreduce_ptr();
!  - the constants have the C names and values (a 'make check' test compares them with
!    the header); the API version constants are this module's, checked by the library
!    in symcoll_comm_create().
module symcoll
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit, output_unit, int32, int64
    implicit none
    private

    ! ---- API version (symcoll.h) --------------------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_API_MAJOR = 0
    integer(c_int), parameter, public :: SYMCOLL_API_MINOR = 5

    ! ---- status codes (symcoll_status_t) ---------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_OK = 0
    integer(c_int), parameter, public :: SYMCOLL_ERR_INVALID_PARAM = -1
    integer(c_int), parameter, public :: SYMCOLL_ERR_NO_MEMORY = -2
    integer(c_int), parameter, public :: SYMCOLL_ERR_UNSUPPORTED = -3
    integer(c_int), parameter, public :: SYMCOLL_ERR_TIMED_OUT = -4
    integer(c_int), parameter, public :: SYMCOLL_ERR_PEER_FAILED = -5
    integer(c_int), parameter, public :: SYMCOLL_ERR_ABORTED = -6
    integer(c_int), parameter, public :: SYMCOLL_ERR_MISMATCH = -7
    integer(c_int), parameter, public :: SYMCOLL_ERR_SYSTEM = -8
    integer(c_int), parameter, public :: SYMCOLL_ERR_CUDA = -9
    integer(c_int), parameter, public :: SYMCOLL_ERR_UCX = -10
    integer(c_int), parameter, public :: SYMCOLL_ERR_BOOTSTRAP = -11
    integer(c_int), parameter, public :: SYMCOLL_ERR_INTERNAL = -12
    integer(c_int), parameter, public :: SYMCOLL_ERR_IN_PROGRESS = -13
    integer(c_int), parameter, public :: SYMCOLL_ERR_LAST = -14

    ! ---- element types (symcoll_dtype_t) ----------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_INT8 = 0
    integer(c_int), parameter, public :: SYMCOLL_UINT8 = 1
    integer(c_int), parameter, public :: SYMCOLL_INT32 = 2
    integer(c_int), parameter, public :: SYMCOLL_UINT32 = 3
    integer(c_int), parameter, public :: SYMCOLL_INT64 = 4
    integer(c_int), parameter, public :: SYMCOLL_UINT64 = 5
    integer(c_int), parameter, public :: SYMCOLL_FLOAT16 = 6
    integer(c_int), parameter, public :: SYMCOLL_BFLOAT16 = 7
    integer(c_int), parameter, public :: SYMCOLL_FLOAT32 = 8
    integer(c_int), parameter, public :: SYMCOLL_FLOAT64 = 9
    integer(c_int), parameter, public :: SYMCOLL_DTYPE_LAST = 10

    ! ---- reduction operators (symcoll_op_t) -------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_SUM = 0
    integer(c_int), parameter, public :: SYMCOLL_PROD = 1
    integer(c_int), parameter, public :: SYMCOLL_MIN = 2
    integer(c_int), parameter, public :: SYMCOLL_MAX = 3
    integer(c_int), parameter, public :: SYMCOLL_AVG = 4
    integer(c_int), parameter, public :: SYMCOLL_OP_LAST = 5

    ! ---- memory types (symcoll_mem_type_t) --------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_MEM_HOST = 0
    integer(c_int), parameter, public :: SYMCOLL_MEM_CUDA = 1
    integer(c_int), parameter, public :: SYMCOLL_MEM_LAST = 2

    ! ---- bits of symcoll_comm_params_t%field_mask -------------------------------------
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_RANK = 1
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_NRANKS = 2
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_ALLGATHER = 4
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE = 8
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_TIMEOUT = 16
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER = 32
    integer(c_int64_t), parameter, public :: SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE = 64

    ! ---- symcoll_reduction_order_t (symcoll_comm_params_t%reduction_order) -------------
    integer(c_int), parameter, public :: SYMCOLL_ORDER_CANONICAL = 0
    integer(c_int), parameter, public :: SYMCOLL_ORDER_FASTEST = 1
    integer(c_int), parameter, public :: SYMCOLL_ORDER_AUTO = 2

    ! ---- color of symcoll_comm_split() that joins no new communicator -----------------
    integer(c_int), parameter, public :: SYMCOLL_SPLIT_NOCOLOR = -1

    ! ---- bits of symcoll_pool_attr_t%field_mask ---------------------------------------
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_RESERVED = 1
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_MAPPED = 2
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_IN_USE = 4
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_PEAK = 8
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_GROWTHS = 16
    integer(c_int64_t), parameter, public :: SYMCOLL_POOL_ATTR_FIELD_SEGMENTS = 32

    ! ---- flags of symcoll_config_print() ----------------------------------------------
    integer(c_int), parameter, public :: SYMCOLL_CONFIG_PRINT_DOC = 1

    ! ---- structures (the C layout: bind(c)) -------------------------------------------
    !> symcoll_comm_params_t; symcoll_comm_create() also takes its fields as keywords
    type, bind(c), public :: symcoll_comm_params_t
        integer(c_int64_t) :: field_mask = 0
        integer(c_int) :: rank = 0
        integer(c_int) :: nranks = 0
        type(c_funptr) :: allgather = c_null_funptr
        type(c_ptr) :: allgather_ctx = c_null_ptr
        integer(c_int) :: cuda_device = 0
        real(c_double) :: timeout_sec = 0
        integer(c_int) :: reduction_order = 0
        type(c_ptr) :: tune_file = c_null_ptr
    end type symcoll_comm_params_t

    !> symcoll_pool_attr_t: set field_mask to the fields wanted
    type, bind(c), public :: symcoll_pool_attr_t
        integer(c_int64_t) :: field_mask = 0
        integer(c_size_t) :: reserved = 0
        integer(c_size_t) :: mapped = 0
        integer(c_size_t) :: in_use = 0
        integer(c_size_t) :: peak = 0
        integer(c_int64_t) :: growths = 0
        integer(c_int64_t) :: segments = 0
    end type symcoll_pool_attr_t

    !> A communicator: the C handle (symcoll_comm_h), and what symcoll_comm_destroy()
    !> releases after it (set by creation helpers such as symcoll_mpi's).
    type, public :: symcoll_comm
        type(c_ptr) :: handle = c_null_ptr
        type(c_ptr) :: cleanup_ctx = c_null_ptr
        procedure(symcoll_cleanup_fn), pointer, nopass :: cleanup => null()
    end type symcoll_comm

    abstract interface
        !> symcoll_allgather_fn_t: gather size bytes of src from every rank into dst
        !> (rank r's at offset r*size); 0 on success
        integer(c_int) function symcoll_allgather_fn(src, dst, size, ctx) bind(c)
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: src, dst, ctx
            integer(c_size_t), value :: size
        end function symcoll_allgather_fn
        !> called by symcoll_comm_destroy() after the C destroy, with comm%cleanup_ctx
        subroutine symcoll_cleanup_fn(ctx)
            import :: c_ptr
            type(c_ptr), intent(in) :: ctx
        end subroutine symcoll_cleanup_fn
    end interface
    public :: symcoll_allgather_fn, symcoll_cleanup_fn

    public :: symcoll_status_string, symcoll_version_string, symcoll_get_version
    public :: symcoll_build_info, symcoll_config_print
    public :: symcoll_dtype_size, symcoll_dtype_name, symcoll_op_name
    public :: symcoll_comm_create, symcoll_comm_create_version, symcoll_comm_destroy
    public :: symcoll_comm_split, symcoll_comm_shrink
    public :: symcoll_comm_abort, symcoll_comm_rank, symcoll_comm_size
    public :: symcoll_allreduce, symcoll_allreduce_inplace, symcoll_allreduce_ptr
    public :: symcoll_mem_alloc, symcoll_mem_free, symcoll_pool_query, symcoll_pool_trim
    public :: symcoll_pool_reserve
    public :: symcoll_comm_print_topology, symcoll_comm_print_decisions
    public :: symcoll_comm_set_algo, symcoll_comm_layout

    !> symcoll_allreduce(sendbuf, recvbuf, count, dtype, op, comm [, ierr] [, stream])
    interface symcoll_allreduce
        module procedure allreduce_i4, allreduce_i8
    end interface symcoll_allreduce

    !> symcoll_allreduce_inplace(buf, count, dtype, op, comm [, ierr] [, stream])
    interface symcoll_allreduce_inplace
        module procedure allreduce_inplace_i4, allreduce_inplace_i8
    end interface symcoll_allreduce_inplace

    !> symcoll_allreduce_ptr(sendptr, recvptr, count, dtype, op, comm [, ierr] [, stream])
    interface symcoll_allreduce_ptr
        module procedure allreduce_ptr_i4, allreduce_ptr_i8
    end interface symcoll_allreduce_ptr

    !> symcoll_mem_alloc(comm, size, mem_type, ptr [, ierr])
    interface symcoll_mem_alloc
        module procedure mem_alloc_i4, mem_alloc_i8
    end interface symcoll_mem_alloc

    ! what symcoll_f_print() prints (fortran/symcoll_f.h)
    integer(c_int), parameter :: PRINT_CONFIG = 0, PRINT_TOPOLOGY = 1, PRINT_DECISIONS = 2

    ! ---- the C functions ---------------------------------------------------------------
    interface
        type(c_ptr) function c_status_string(status) bind(c, name="symcoll_status_string")
            import :: c_ptr, c_int
            integer(c_int), value :: status
        end function
        type(c_ptr) function c_version_string() bind(c, name="symcoll_version_string")
            import :: c_ptr
        end function
        subroutine c_get_version(major, minor, patch) bind(c, name="symcoll_get_version")
            import :: c_int
            integer(c_int), intent(out) :: major, minor, patch
        end subroutine
        type(c_ptr) function c_build_info() bind(c, name="symcoll_build_info")
            import :: c_ptr
        end function
        integer(c_size_t) function c_dtype_size(dtype) bind(c, name="symcoll_dtype_size")
            import :: c_size_t, c_int
            integer(c_int), value :: dtype
        end function
        type(c_ptr) function c_dtype_name(dtype) bind(c, name="symcoll_dtype_name")
            import :: c_ptr, c_int
            integer(c_int), value :: dtype
        end function
        type(c_ptr) function c_op_name(op) bind(c, name="symcoll_op_name")
            import :: c_ptr, c_int
            integer(c_int), value :: op
        end function
        integer(c_int) function c_comm_create_version(api_major, api_minor, params, comm) &
            bind(c, name="symcoll_comm_create_version")
            import :: c_int, c_ptr, symcoll_comm_params_t
            integer(c_int), value :: api_major, api_minor
            type(symcoll_comm_params_t), intent(in) :: params
            type(c_ptr), intent(out) :: comm
        end function
        integer(c_int) function c_comm_destroy(comm) bind(c, name="symcoll_comm_destroy")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
        end function
        ! params as a pointer: NULL when the caller sets nothing (comm's settings)
        integer(c_int) function c_comm_split(comm, color, key, params, newcomm) &
            bind(c, name="symcoll_comm_split")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm, params
            integer(c_int), value :: color, key
            type(c_ptr), intent(out) :: newcomm
        end function
        integer(c_int) function c_comm_shrink(comm, params, newcomm) &
            bind(c, name="symcoll_comm_shrink")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm, params
            type(c_ptr), intent(out) :: newcomm
        end function
        integer(c_int) function c_comm_abort(comm) bind(c, name="symcoll_comm_abort")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
        end function
        integer(c_int) function c_comm_set_algo(comm, algo) bind(c, name="symcoll_comm_set_algo")
            import :: c_int, c_ptr, c_char
            type(c_ptr), value :: comm
            character(kind=c_char), intent(in) :: algo(*)
        end function
        integer(c_int) function c_comm_layout(comm, buf, len) bind(c, name="symcoll_comm_layout")
            import :: c_int, c_ptr, c_char, c_size_t
            type(c_ptr), value :: comm
            character(kind=c_char), intent(out) :: buf(*)
            integer(c_size_t), value :: len
        end function
        integer(c_int) function c_comm_rank(comm, rank) bind(c, name="symcoll_comm_rank")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
            integer(c_int), intent(out) :: rank
        end function
        integer(c_int) function c_comm_size(comm, size) bind(c, name="symcoll_comm_size")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
            integer(c_int), intent(out) :: size
        end function
        integer(c_int) function c_allreduce(sendbuf, recvbuf, count, dtype, op, comm, &
                                            stream) bind(c, name="symcoll_allreduce")
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: sendbuf, recvbuf, comm, stream
            integer(c_size_t), value :: count
            integer(c_int), value :: dtype, op
        end function
        integer(c_int) function c_mem_alloc(comm, size, mem_type, ptr) &
            bind(c, name="symcoll_mem_alloc")
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: comm
            integer(c_size_t), value :: size
            integer(c_int), value :: mem_type
            type(c_ptr), intent(out) :: ptr
        end function
        integer(c_int) function c_mem_free(comm, ptr) bind(c, name="symcoll_mem_free")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm, ptr
        end function
        integer(c_int) function c_pool_query(comm, mem_type, attr) &
            bind(c, name="symcoll_pool_query")
            import :: c_int, c_ptr, symcoll_pool_attr_t
            type(c_ptr), value :: comm
            integer(c_int), value :: mem_type
            type(symcoll_pool_attr_t), intent(inout) :: attr
        end function
        integer(c_int) function c_pool_trim(comm, mem_type) bind(c, name="symcoll_pool_trim")
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
            integer(c_int), value :: mem_type
        end function
        integer(c_int) function c_pool_reserve(comm, size, mem_type) &
            bind(c, name="symcoll_pool_reserve")
            import :: c_int, c_ptr, c_size_t
            type(c_ptr), value :: comm
            integer(c_size_t), value :: size
            integer(c_int), value :: mem_type
        end function
        ! fortran/symcoll_f.c
        integer(c_int) function f_allreduce(sendbuf, recvbuf, count, dtype, op, comm, &
                                            stream) bind(c, name="symcoll_f_allreduce")
            import :: c_int, c_ptr, c_size_t
            type(*), dimension(..), intent(in) :: sendbuf, recvbuf
            integer(c_size_t), value :: count
            integer(c_int), value :: dtype, op
            type(c_ptr), value :: comm, stream
        end function
        integer(c_int) function f_print(what, comm, flags, text, len) &
            bind(c, name="symcoll_f_print")
            import :: c_int, c_ptr, c_size_t
            integer(c_int), value :: what, flags
            type(c_ptr), value :: comm
            type(c_ptr), intent(out) :: text
            integer(c_size_t), intent(out) :: len
        end function
        subroutine f_free(ptr) bind(c, name="symcoll_f_free")
            import :: c_ptr
            type(c_ptr), value :: ptr
        end subroutine
        integer(c_size_t) function c_strlen(s) bind(c, name="strlen")
            import :: c_size_t, c_ptr
            type(c_ptr), value :: s
        end function
    end interface

contains

    ! ---- helpers -------------------------------------------------------------------------

    !> A C string as a Fortran string ("" for NULL).
    function c_string(p) result(s)
        type(c_ptr), intent(in) :: p
        character(len=:), allocatable :: s
        character(kind=c_char), pointer :: chars(:)
        integer(c_size_t) :: n, i

        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = c_strlen(p)
        call c_f_pointer(p, chars, [n])
        allocate (character(len=n) :: s)
        do i = 1, n
            s(i:i) = chars(i)
        end do
    end function c_string

    !> Hands the status to the caller: in ierr if present, else an error ends the program.
    subroutine finish(status, ierr, what)
        integer(c_int), intent(in) :: status
        integer, intent(out), optional :: ierr
        character(len=*), intent(in) :: what

        if (present(ierr)) then
            ierr = int(status)
        else if (status /= SYMCOLL_OK) then
            write (error_unit, '(a,a,a,a,a,i0,a)') 'symcoll: ', what, ' failed: ', &
                symcoll_status_string(status), ' (status ', status, ')'
            error stop 'symcoll: error without ierr'
        end if
    end subroutine finish

    !> Writes a report printed by symcoll_f_print() to a Fortran unit, line by line.
    subroutine print_report(what, comm, flags, unit, ierr, name)
        integer(c_int), intent(in) :: what, flags
        type(c_ptr), intent(in) :: comm
        integer, intent(in), optional :: unit
        integer, intent(out), optional :: ierr
        character(len=*), intent(in) :: name
        type(c_ptr) :: text
        integer(c_size_t) :: len, i, start
        character(kind=c_char), pointer :: chars(:)
        integer(c_int) :: s
        integer :: u

        u = output_unit
        if (present(unit)) u = unit
        s = f_print(what, comm, flags, text, len)
        if (c_associated(text)) then
            call c_f_pointer(text, chars, [max(len, 1_c_size_t)])
            start = 1
            do i = 1, len
                if (chars(i) == c_new_line) then
                    call write_chars(u, chars(start:i - 1))
                    start = i + 1
                end if
            end do
            if (start <= len) call write_chars(u, chars(start:len))
            call f_free(text)
        end if
        call finish(s, ierr, name)
    end subroutine print_report

    subroutine write_chars(unit, chars)
        integer, intent(in) :: unit
        character(kind=c_char), intent(in) :: chars(:)
        character(len=size(chars)) :: line
        integer :: i

        do i = 1, size(chars)
            line(i:i) = chars(i)
        end do
        write (unit, '(a)') line
    end subroutine write_chars

    ! ---- library information -------------------------------------------------------------

    !> Human-readable text of a status code.
    function symcoll_status_string(status) result(s)
        integer, intent(in) :: status
        character(len=:), allocatable :: s
        s = c_string(c_status_string(int(status, c_int)))
    end function symcoll_status_string

    !> The library's version, "MAJOR.MINOR.PATCH".
    function symcoll_version_string() result(s)
        character(len=:), allocatable :: s
        s = c_string(c_version_string())
    end function symcoll_version_string

    subroutine symcoll_get_version(major, minor, patch)
        integer, intent(out), optional :: major, minor, patch
        integer(c_int) :: a, b, c
        call c_get_version(a, b, c)
        if (present(major)) major = a
        if (present(minor)) minor = b
        if (present(patch)) patch = c
    end subroutine symcoll_get_version

    !> The build configuration as one line (CUDA on/off, UCX version, ...).
    function symcoll_build_info() result(s)
        character(len=:), allocatable :: s
        s = c_string(c_build_info())
    end function symcoll_build_info

    !> Prints every SYMCOLL_* variable to unit (default: standard output); flags:
    !> SYMCOLL_CONFIG_PRINT_DOC. A value that does not parse is marked, and the status is
    !> SYMCOLL_ERR_INVALID_PARAM.
    subroutine symcoll_config_print(flags, unit, ierr)
        integer, intent(in), optional :: flags, unit
        integer, intent(out), optional :: ierr
        integer(c_int) :: f
        f = 0
        if (present(flags)) f = int(flags, c_int)
        call print_report(PRINT_CONFIG, c_null_ptr, f, unit, ierr, 'symcoll_config_print')
    end subroutine symcoll_config_print

    !> Size of one element in bytes; 0 for an invalid type.
    integer(c_size_t) function symcoll_dtype_size(dtype)
        integer, intent(in) :: dtype
        symcoll_dtype_size = c_dtype_size(int(dtype, c_int))
    end function symcoll_dtype_size

    !> Name of a datatype ("float32", ...); "" for an invalid one.
    function symcoll_dtype_name(dtype) result(s)
        integer, intent(in) :: dtype
        character(len=:), allocatable :: s
        s = c_string(c_dtype_name(int(dtype, c_int)))
    end function symcoll_dtype_name

    !> Name of an operator ("sum", ...); "" for an invalid one.
    function symcoll_op_name(op) result(s)
        integer, intent(in) :: op
        character(len=:), allocatable :: s
        s = c_string(c_op_name(int(op, c_int)))
    end function symcoll_op_name

    ! ---- communicators -------------------------------------------------------------------

    !> Creates a communicator (collective). Without arguments, rank and size come from
    !> the environment (symcoll_run, mpirun, srun) and the built-in bootstrap connects the
    !> ranks. The keywords set the fields of params (and their field_mask bits); with an
    !> allgather (c_funloc of a symcoll_allgather_fn), rank and nranks are needed too.
    subroutine symcoll_comm_create(comm, ierr, params, rank, nranks, cuda_device, &
                                   timeout_sec, allgather, allgather_ctx, reduction_order, &
                                   tune_file)
        type(symcoll_comm), intent(out) :: comm
        integer, intent(out), optional :: ierr
        type(symcoll_comm_params_t), intent(in), optional :: params
        integer, intent(in), optional :: rank, nranks, cuda_device
        real(c_double), intent(in), optional :: timeout_sec
        type(c_funptr), intent(in), optional :: allgather
        type(c_ptr), intent(in), optional :: allgather_ctx
        integer, intent(in), optional :: reduction_order
        character(len=*), intent(in), optional :: tune_file
        type(symcoll_comm_params_t) :: p
        character(kind=c_char), allocatable, target :: tune_c(:)
        integer :: i

        if (present(params)) p = params
        if (present(tune_file)) then
            ! NUL-terminated, alive until the call returns
            allocate (tune_c(len_trim(tune_file) + 1))
            do i = 1, len_trim(tune_file)
                tune_c(i) = tune_file(i:i)
            end do
            tune_c(len_trim(tune_file) + 1) = c_null_char
            p%tune_file = c_loc(tune_c)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_TUNE_FILE)
        end if
        if (present(reduction_order)) then
            p%reduction_order = int(reduction_order, c_int)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_REDUCTION_ORDER)
        end if
        if (present(rank)) then
            p%rank = int(rank, c_int)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_RANK)
        end if
        if (present(nranks)) then
            p%nranks = int(nranks, c_int)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_NRANKS)
        end if
        if (present(cuda_device)) then
            p%cuda_device = int(cuda_device, c_int)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE)
        end if
        if (present(timeout_sec)) then
            p%timeout_sec = timeout_sec
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_TIMEOUT)
        end if
        if (present(allgather)) then
            p%allgather = allgather
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_ALLGATHER)
        end if
        if (present(allgather_ctx)) p%allgather_ctx = allgather_ctx
        call finish(c_comm_create_version(SYMCOLL_API_MAJOR, SYMCOLL_API_MINOR, p, &
                                          comm%handle), ierr, 'symcoll_comm_create')
    end subroutine symcoll_comm_create

    !> symcoll_comm_create_version() of the C API: creation with an explicit API version.
    subroutine symcoll_comm_create_version(api_major, api_minor, params, comm, ierr)
        integer, intent(in) :: api_major, api_minor
        type(symcoll_comm_params_t), intent(in) :: params
        type(symcoll_comm), intent(out) :: comm
        integer, intent(out), optional :: ierr
        call finish(c_comm_create_version(int(api_major, c_int), int(api_minor, c_int), &
                                          params, comm%handle), ierr, &
                    'symcoll_comm_create_version')
    end subroutine symcoll_comm_create_version

    !> Destroys a communicator (collective), then runs its cleanup (if a creation helper
    !> set one). The handle is cleared.
    subroutine symcoll_comm_destroy(comm, ierr)
        type(symcoll_comm), intent(inout) :: comm
        integer, intent(out), optional :: ierr
        integer(c_int) :: s

        s = c_comm_destroy(comm%handle)
        if (s == SYMCOLL_OK) then
            comm%handle = c_null_ptr
            if (associated(comm%cleanup)) call comm%cleanup(comm%cleanup_ctx)
            comm%cleanup => null()
            comm%cleanup_ctx = c_null_ptr
        end if
        call finish(s, ierr, 'symcoll_comm_destroy')
    end subroutine symcoll_comm_destroy

    !> The params of a split or a shrink in p, and whether the caller set any field (if
    !> not, NULL is passed: the new communicator takes the parent's settings).
    logical function child_params(p, cuda_device, timeout_sec)
        type(symcoll_comm_params_t), intent(out) :: p
        integer, intent(in), optional :: cuda_device
        real(c_double), intent(in), optional :: timeout_sec

        if (present(cuda_device)) then
            p%cuda_device = int(cuda_device, c_int)
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_CUDA_DEVICE)
        end if
        if (present(timeout_sec)) then
            p%timeout_sec = timeout_sec
            p%field_mask = ior(p%field_mask, SYMCOLL_COMM_PARAM_FIELD_TIMEOUT)
        end if
        child_params = p%field_mask /= 0
    end function child_params

    !> Splits comm by color and key as MPI_Comm_split (collective over comm): the ranks
    !> of one color form newcomm, ranked by key, then by their rank in comm. With
    !> SYMCOLL_SPLIT_NOCOLOR newcomm is a null handle (c_associated(newcomm%handle) is
    !> false), not to be destroyed. cuda_device and timeout_sec are the fields of
    !> symcoll_comm_params_t (default: comm's).
    subroutine symcoll_comm_split(comm, color, key, newcomm, ierr, cuda_device, timeout_sec)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(in) :: color, key
        type(symcoll_comm), intent(out) :: newcomm
        integer, intent(out), optional :: ierr
        integer, intent(in), optional :: cuda_device
        real(c_double), intent(in), optional :: timeout_sec
        type(symcoll_comm_params_t), target :: p
        type(c_ptr) :: params

        params = c_null_ptr
        if (child_params(p, cuda_device, timeout_sec)) params = c_loc(p)
        call finish(c_comm_split(comm%handle, int(color, c_int), int(key, c_int), params, &
                                 newcomm%handle), ierr, 'symcoll_comm_split')
    end subroutine symcoll_comm_split

    !> Makes newcomm of the ranks of comm still alive (collective over them), after comm
    !> failed: see symcoll_comm_shrink(3). comm is then good only for
    !> symcoll_comm_destroy() and further shrinks; on SYMCOLL_ERR_PEER_FAILED call again.
    !> cuda_device and timeout_sec (which also bounds the agreement) as for the split.
    subroutine symcoll_comm_shrink(comm, newcomm, ierr, cuda_device, timeout_sec)
        type(symcoll_comm), intent(in) :: comm
        type(symcoll_comm), intent(out) :: newcomm
        integer, intent(out), optional :: ierr
        integer, intent(in), optional :: cuda_device
        real(c_double), intent(in), optional :: timeout_sec
        type(symcoll_comm_params_t), target :: p
        type(c_ptr) :: params

        params = c_null_ptr
        if (child_params(p, cuda_device, timeout_sec)) params = c_loc(p)
        call finish(c_comm_shrink(comm%handle, params, newcomm%handle), ierr, &
                    'symcoll_comm_shrink')
    end subroutine symcoll_comm_shrink

    !> Aborts a communicator: every pending and future call on it fails promptly.
    subroutine symcoll_comm_abort(comm, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        call finish(c_comm_abort(comm%handle), ierr, 'symcoll_comm_abort')
    end subroutine symcoll_comm_abort

    !> Forces the algorithm of the communicator's next calls (as SYMCOLL_ALGO names them);
    !> 'auto' gives the choice back (symcoll_comm_set_algo(3)).
    subroutine symcoll_comm_set_algo(comm, algo, ierr)
        type(symcoll_comm), intent(in) :: comm
        character(len=*), intent(in) :: algo
        integer, intent(out), optional :: ierr
        call finish(c_comm_set_algo(comm%handle, trim(algo)//c_null_char), ierr, &
                    'symcoll_comm_set_algo')
    end subroutine symcoll_comm_set_algo

    !> The communicator's layout as tuning files name it (symcoll_comm_layout(3)).
    subroutine symcoll_comm_layout(comm, layout, ierr)
        type(symcoll_comm), intent(in) :: comm
        character(len=:), allocatable, intent(out) :: layout
        integer, intent(out), optional :: ierr
        character(kind=c_char) :: buf(256)
        integer(c_int) :: s
        integer :: i, n

        buf = c_null_char
        s = c_comm_layout(comm%handle, buf, 256_c_size_t)
        n = 0
        do while (n < 256)
            if (buf(n + 1) == c_null_char) exit
            n = n + 1
        end do
        allocate (character(len=n) :: layout)
        do i = 1, n
            layout(i:i) = buf(i)
        end do
        call finish(s, ierr, 'symcoll_comm_layout')
    end subroutine symcoll_comm_layout

    subroutine symcoll_comm_rank(comm, rank, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out) :: rank
        integer, intent(out), optional :: ierr
        integer(c_int) :: r, s
        r = -1
        s = c_comm_rank(comm%handle, r)
        rank = r
        call finish(s, ierr, 'symcoll_comm_rank')
    end subroutine symcoll_comm_rank

    subroutine symcoll_comm_size(comm, size, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out) :: size
        integer, intent(out), optional :: ierr
        integer(c_int) :: n, s
        n = 0
        s = c_comm_size(comm%handle, n)
        size = n
        call finish(s, ierr, 'symcoll_comm_size')
    end subroutine symcoll_comm_size

    ! ---- all-reduce ----------------------------------------------------------------------

    function stream_of(stream) result(p)
        type(c_ptr), intent(in), optional :: stream
        type(c_ptr) :: p
        p = c_null_ptr
        if (present(stream)) p = stream
    end function stream_of

    !> count must not be negative
    integer(c_size_t) function count_of(count, ok)
        integer(int64), intent(in) :: count
        logical, intent(out) :: ok
        ok = count >= 0
        count_of = int(max(count, 0_int64), c_size_t)
    end function count_of

    subroutine allreduce_i8(sendbuf, recvbuf, count, dtype, op, comm, ierr, stream)
        type(*), dimension(..), intent(in) :: sendbuf
        type(*), dimension(..), intent(inout) :: recvbuf
        integer(int64), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        integer(c_size_t) :: n
        integer(c_int) :: s
        logical :: ok

        n = count_of(count, ok)
        s = SYMCOLL_ERR_INVALID_PARAM
        if (ok) s = f_allreduce(sendbuf, recvbuf, n, int(dtype, c_int), int(op, c_int), &
                                comm%handle, stream_of(stream))
        call finish(s, ierr, 'symcoll_allreduce')
    end subroutine allreduce_i8

    subroutine allreduce_i4(sendbuf, recvbuf, count, dtype, op, comm, ierr, stream)
        type(*), dimension(..), intent(in) :: sendbuf
        type(*), dimension(..), intent(inout) :: recvbuf
        integer(int32), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        call allreduce_i8(sendbuf, recvbuf, int(count, int64), dtype, op, comm, ierr, stream)
    end subroutine allreduce_i4

    subroutine allreduce_inplace_i8(buf, count, dtype, op, comm, ierr, stream)
        type(*), dimension(..), intent(inout) :: buf
        integer(int64), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        integer(c_size_t) :: n
        integer(c_int) :: s
        logical :: ok

        n = count_of(count, ok)
        s = SYMCOLL_ERR_INVALID_PARAM
        if (ok) s = f_allreduce(buf, buf, n, int(dtype, c_int), int(op, c_int), &
                                comm%handle, stream_of(stream))
        call finish(s, ierr, 'symcoll_allreduce_inplace')
    end subroutine allreduce_inplace_i8

    subroutine allreduce_inplace_i4(buf, count, dtype, op, comm, ierr, stream)
        type(*), dimension(..), intent(inout) :: buf
        integer(int32), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        call allreduce_inplace_i8(buf, int(count, int64), dtype, op, comm, ierr, stream)
    end subroutine allreduce_inplace_i4

    subroutine allreduce_ptr_i8(sendbuf, recvbuf, count, dtype, op, comm, ierr, stream)
        type(c_ptr), intent(in) :: sendbuf, recvbuf
        integer(int64), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        integer(c_size_t) :: n
        integer(c_int) :: s
        logical :: ok

        n = count_of(count, ok)
        s = SYMCOLL_ERR_INVALID_PARAM
        if (ok) s = c_allreduce(sendbuf, recvbuf, n, int(dtype, c_int), int(op, c_int), &
                                comm%handle, stream_of(stream))
        call finish(s, ierr, 'symcoll_allreduce_ptr')
    end subroutine allreduce_ptr_i8

    subroutine allreduce_ptr_i4(sendbuf, recvbuf, count, dtype, op, comm, ierr, stream)
        type(c_ptr), intent(in) :: sendbuf, recvbuf
        integer(int32), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(symcoll_comm), intent(in) :: comm
        integer, intent(out), optional :: ierr
        type(c_ptr), intent(in), optional :: stream
        call allreduce_ptr_i8(sendbuf, recvbuf, int(count, int64), dtype, op, comm, ierr, &
                              stream)
    end subroutine allreduce_ptr_i4

    ! ---- symmetric memory and the pool ---------------------------------------------------

    !> Allocates size bytes of symmetric memory (collective); ptr is this rank's view
    !> (c_f_pointer makes it an array).
    subroutine mem_alloc_i8(comm, size, mem_type, ptr, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer(int64), intent(in) :: size
        integer, intent(in) :: mem_type
        type(c_ptr), intent(out) :: ptr
        integer, intent(out), optional :: ierr
        integer(c_int) :: s

        ptr = c_null_ptr
        s = SYMCOLL_ERR_INVALID_PARAM
        if (size >= 0) s = c_mem_alloc(comm%handle, int(size, c_size_t), &
                                       int(mem_type, c_int), ptr)
        call finish(s, ierr, 'symcoll_mem_alloc')
    end subroutine mem_alloc_i8

    subroutine mem_alloc_i4(comm, size, mem_type, ptr, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer(int32), intent(in) :: size
        integer, intent(in) :: mem_type
        type(c_ptr), intent(out) :: ptr
        integer, intent(out), optional :: ierr
        call mem_alloc_i8(comm, int(size, int64), mem_type, ptr, ierr)
    end subroutine mem_alloc_i4

    !> Frees a buffer from symcoll_mem_alloc() (not collective; see symcoll.h).
    subroutine symcoll_mem_free(comm, ptr, ierr)
        type(symcoll_comm), intent(in) :: comm
        type(c_ptr), intent(in) :: ptr
        integer, intent(out), optional :: ierr
        call finish(c_mem_free(comm%handle, ptr), ierr, 'symcoll_mem_free')
    end subroutine symcoll_mem_free

    !> Reads the pool's statistics: attr%field_mask says which fields to fill.
    subroutine symcoll_pool_query(comm, mem_type, attr, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(in) :: mem_type
        type(symcoll_pool_attr_t), intent(inout) :: attr
        integer, intent(out), optional :: ierr
        call finish(c_pool_query(comm%handle, int(mem_type, c_int), attr), ierr, &
                    'symcoll_pool_query')
    end subroutine symcoll_pool_query

    !> Unmaps unused tail segments of the pool (collective).
    subroutine symcoll_pool_trim(comm, mem_type, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(in) :: mem_type
        integer, intent(out), optional :: ierr
        call finish(c_pool_trim(comm%handle, int(mem_type, c_int)), ierr, 'symcoll_pool_trim')
    end subroutine symcoll_pool_trim

    !> Grows the pool so that an allocation of size bytes fits without growth
    !> (collective; API 0.5; see symcoll.h).
    subroutine symcoll_pool_reserve(comm, size, mem_type, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer(int64), intent(in) :: size
        integer, intent(in) :: mem_type
        integer, intent(out), optional :: ierr
        integer(c_int) :: s

        s = SYMCOLL_ERR_INVALID_PARAM
        if (size >= 0) s = c_pool_reserve(comm%handle, int(size, c_size_t), int(mem_type, c_int))
        call finish(s, ierr, 'symcoll_pool_reserve')
    end subroutine symcoll_pool_reserve

    ! ---- reports -------------------------------------------------------------------------

    !> Prints the topology the communicator was created on to unit (default: stdout).
    subroutine symcoll_comm_print_topology(comm, unit, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(in), optional :: unit
        integer, intent(out), optional :: ierr
        call print_report(PRINT_TOPOLOGY, comm%handle, 0_c_int, unit, ierr, &
                          'symcoll_comm_print_topology')
    end subroutine symcoll_comm_print_topology

    !> Prints the all-reduce decision table of the communicator to unit (default: stdout).
    subroutine symcoll_comm_print_decisions(comm, unit, ierr)
        type(symcoll_comm), intent(in) :: comm
        integer, intent(in), optional :: unit
        integer, intent(out), optional :: ierr
        call print_report(PRINT_DECISIONS, comm%handle, 0_c_int, unit, ierr, &
                          'symcoll_comm_print_decisions')
    end subroutine symcoll_comm_print_decisions

end module symcoll
