! Test of the Fortran module under symcoll_run: every datatype (the ones Fortran lacks
! through integer storage of their size), sum/min/max exactly, prod and avg on two types,
! arrays of rank 0 to 2, in place, symmetric memory, the argument checks of the wrappers
! (short or non-contiguous buffers), the information calls and the reports, a split
! (an all-reduce on each part; a rank of no color) and a shrink with every rank alive.
program test_fortran
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64
    use symcoll
    implicit none

    integer, parameter :: n = 1003
    integer, parameter :: ops(3) = [SYMCOLL_SUM, SYMCOLL_MIN, SYMCOLL_MAX]
    type(symcoll_comm) :: comm
    integer :: rank, nranks, ierr, failures, k

    failures = 0
    call symcoll_comm_create(comm, ierr)
    call expect_status('symcoll_comm_create', ierr, SYMCOLL_OK)
    if (ierr /= SYMCOLL_OK) error stop 1
    call symcoll_comm_rank(comm, rank)
    call symcoll_comm_size(comm, nranks)

    call test_info()
    do k = 1, size(ops)
        call test_int8(SYMCOLL_INT8, ops(k))
        call test_int8(SYMCOLL_UINT8, ops(k))
        call test_half(SYMCOLL_FLOAT16, ops(k))
        call test_half(SYMCOLL_BFLOAT16, ops(k))
        call test_int32(SYMCOLL_INT32, ops(k))
        call test_int32(SYMCOLL_UINT32, ops(k))
        call test_int64(SYMCOLL_INT64, ops(k))
        call test_int64(SYMCOLL_UINT64, ops(k))
        call test_real32(ops(k))
        call test_real64(ops(k))
    end do
    call test_int32(SYMCOLL_INT32, SYMCOLL_PROD)
    call test_int32(SYMCOLL_INT32, SYMCOLL_AVG)
    call test_real64(SYMCOLL_PROD)
    call test_real64(SYMCOLL_AVG)
    call test_shapes_and_checks()
    call test_symmetric_memory()
    call test_split()
    call test_shrink() ! last: comm is then good only for its destroy

    call symcoll_comm_destroy(comm, ierr)
    call expect_status('symcoll_comm_destroy', ierr, SYMCOLL_OK)
    call symcoll_comm_destroy(comm, ierr)
    call expect_status('symcoll_comm_destroy of a destroyed handle', ierr, &
                       SYMCOLL_ERR_INVALID_PARAM)

    if (failures == 0) then
        write (*, '(a,i0,a)') 'rank ', rank, ': PASS'
    else
        write (*, '(a,i0,a,i0,a)') 'rank ', rank, ': FAIL (', failures, ' checks)'
        error stop 1
    end if

contains

    subroutine fail(what)
        character(len=*), intent(in) :: what
        write (*, '(a,i0,a,a)') 'rank ', rank, ': FAIL: ', what
        failures = failures + 1
    end subroutine fail

    subroutine expect_status(what, got, want)
        character(len=*), intent(in) :: what
        integer, intent(in) :: got, want
        character(len=160) :: msg
        if (got /= want) then
            write (msg, '(a,a,i0,a,i0,a,a,a)') what, ': status ', got, ', expected ', want, &
                ' (', symcoll_status_string(got), ')'
            call fail(trim(msg))
        end if
    end subroutine expect_status

    subroutine expect_wrong(what, dtype, op, nwrong)
        character(len=*), intent(in) :: what
        integer, intent(in) :: dtype, op, nwrong
        character(len=160) :: msg
        if (nwrong /= 0) then
            write (msg, '(a,1x,a,1x,a,a,i0,a)') what, symcoll_dtype_name(dtype), &
                symcoll_op_name(op), ': ', nwrong, ' wrong elements'
            call fail(trim(msg))
        end if
    end subroutine expect_wrong

    ! rank r's input at index i: small integers, so every reduction is exact in every type
    integer function sval(i, r)
        integer, intent(in) :: i, r
        sval = mod(i * 7 + r * 3, 11) - 5
    end function sval

    integer function uval(i, r)
        integer, intent(in) :: i, r
        uval = mod(i * 5 + r * 3, 11)
    end function uval

    ! the reduction of f(i, 0..nranks-1), in integers
    integer(int64) function expected(op, i, unsigned)
        integer, intent(in) :: op, i
        logical, intent(in) :: unsigned
        integer(int64) :: v, acc
        integer :: r
        acc = 0
        do r = 0, nranks - 1
            if (unsigned) then
                v = uval(i, r)
            else
                v = sval(i, r)
            end if
            if (r == 0) then
                acc = v
            else if (op == SYMCOLL_SUM .or. op == SYMCOLL_AVG) then
                acc = acc + v
            else if (op == SYMCOLL_PROD) then
                acc = acc * v
            else if (op == SYMCOLL_MIN) then
                acc = min(acc, v)
            else
                acc = max(acc, v)
            end if
        end do
        expected = acc
    end function expected

    ! inputs of the prod and avg tests: prod of nranks values stays in int32; avg of
    ! multiples of nranks is exact (also for symcoll's truncation of integer averages)
    integer function pval(op, i, r)
        integer, intent(in) :: op, i, r
        if (op == SYMCOLL_PROD) then
            pval = mod(i + r, 3) - 1 + merge(2, 0, mod(i, 2) == 0)
        else
            pval = nranks * (mod(i * 7 + r * 3, 11) - 5)
        end if
    end function pval

    integer(int64) function pexpected(op, i)
        integer, intent(in) :: op, i
        integer(int64) :: acc
        integer :: r
        acc = merge(1_int64, 0_int64, op == SYMCOLL_PROD)
        do r = 0, nranks - 1
            if (op == SYMCOLL_PROD) then
                acc = acc * pval(op, i, r)
            else
                acc = acc + pval(op, i, r)
            end if
        end do
        if (op == SYMCOLL_AVG) acc = acc / nranks
        pexpected = acc
    end function pexpected

    integer function input(op, i, unsigned)
        integer, intent(in) :: op, i
        logical, intent(in) :: unsigned
        if (op == SYMCOLL_PROD .or. op == SYMCOLL_AVG) then
            input = pval(op, i, rank)
        else if (unsigned) then
            input = uval(i, rank)
        else
            input = sval(i, rank)
        end if
    end function input

    integer(int64) function want(op, i, unsigned)
        integer, intent(in) :: op, i
        logical, intent(in) :: unsigned
        if (op == SYMCOLL_PROD .or. op == SYMCOLL_AVG) then
            want = pexpected(op, i)
        else
            want = expected(op, i, unsigned)
        end if
    end function want

    ! float16 / bfloat16 bits of a small integer (exact in both), from its float32 bits
    integer(int16) function half_bits(v, dtype)
        integer, intent(in) :: v, dtype
        integer(int32) :: b, h
        b = transfer(real(v, real32), 0_int32)
        if (v == 0) then
            h = 0
        else if (dtype == SYMCOLL_BFLOAT16) then
            h = ibits(b, 16, 16)
        else
            h = ior(ishft(ibits(b, 31, 1), 15), &
                    ior(ishft(ibits(b, 23, 8) - 127 + 15, 10), ibits(b, 13, 10)))
        end if
        if (h > 32767) h = h - 65536
        half_bits = int(h, int16)
    end function half_bits

    subroutine test_int8(dtype, op)
        integer, intent(in) :: dtype, op
        integer(int8) :: a(n), b(n)
        integer :: i, nwrong
        logical :: u
        u = dtype == SYMCOLL_UINT8
        do i = 1, n
            a(i) = int(input(op, i, u), int8)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, dtype, op, comm, ierr)
        call expect_status('allreduce int8 storage', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (int(b(i), int64) /= want(op, i, u)) nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce', dtype, op, nwrong)
    end subroutine test_int8

    subroutine test_half(dtype, op)
        integer, intent(in) :: dtype, op
        integer(int16) :: a(n), b(n)
        integer :: i, nwrong
        do i = 1, n
            a(i) = half_bits(input(op, i, .false.), dtype)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, dtype, op, comm, ierr)
        call expect_status('allreduce int16 storage', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (b(i) /= half_bits(int(want(op, i, .false.)), dtype)) nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce', dtype, op, nwrong)
    end subroutine test_half

    subroutine test_int32(dtype, op)
        integer, intent(in) :: dtype, op
        integer(int32) :: a(n), b(n)
        integer :: i, nwrong
        logical :: u
        u = dtype == SYMCOLL_UINT32
        do i = 1, n
            a(i) = input(op, i, u)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, dtype, op, comm, ierr)
        call expect_status('allreduce int32', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (int(b(i), int64) /= want(op, i, u)) nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce', dtype, op, nwrong)
        ! in place, with an int64 count
        call symcoll_allreduce_inplace(a, int(n, int64), dtype, op, comm, ierr)
        call expect_status('allreduce_inplace int32', ierr, SYMCOLL_OK)
        call expect_wrong('allreduce_inplace', dtype, op, count(a /= b))
    end subroutine test_int32

    subroutine test_int64(dtype, op)
        integer, intent(in) :: dtype, op
        integer(int64) :: a(n), b(n)
        integer :: i, nwrong
        logical :: u
        u = dtype == SYMCOLL_UINT64
        do i = 1, n
            a(i) = input(op, i, u)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, dtype, op, comm, ierr)
        call expect_status('allreduce int64', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (b(i) /= want(op, i, u)) nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce', dtype, op, nwrong)
    end subroutine test_int64

    subroutine test_real32(op)
        integer, intent(in) :: op
        real(real32) :: a(n), b(n)
        integer :: i, nwrong
        do i = 1, n
            a(i) = real(input(op, i, .false.), real32)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, SYMCOLL_FLOAT32, op, comm, ierr)
        call expect_status('allreduce real32', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (b(i) /= real(want(op, i, .false.), real32)) nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce', SYMCOLL_FLOAT32, op, nwrong)
    end subroutine test_real32

    ! a rank-2 array: the buffer is its n elements in array element order
    subroutine test_real64(op)
        integer, intent(in) :: op
        real(real64) :: a(17, 59), b(17, 59)
        integer :: i, nwrong
        do i = 1, n
            a(mod(i - 1, 17) + 1, (i - 1) / 17 + 1) = real(input(op, i, .false.), real64)
        end do
        b = -1
        call symcoll_allreduce(a, b, n, SYMCOLL_FLOAT64, op, comm, ierr)
        call expect_status('allreduce real64', ierr, SYMCOLL_OK)
        nwrong = 0
        do i = 1, n
            if (b(mod(i - 1, 17) + 1, (i - 1) / 17 + 1) /= real(want(op, i, .false.), real64)) &
                nwrong = nwrong + 1
        end do
        call expect_wrong('allreduce (rank-2 array)', SYMCOLL_FLOAT64, op, nwrong)
    end subroutine test_real64

    subroutine test_shapes_and_checks()
        real(real64) :: x, y, a(n), b(n)
        ! a scalar is a buffer of one element
        x = rank + 1
        y = 0
        call symcoll_allreduce(x, y, 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
        call expect_status('allreduce of a scalar', ierr, SYMCOLL_OK)
        if (y /= real(nranks * (nranks + 1) / 2, real64)) call fail('scalar sum')
        ! a count larger than the buffers: refused, nothing done, on every rank alike
        a = 1
        b = 7
        call symcoll_allreduce(a, b, n + 1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
        call expect_status('count beyond the buffer', ierr, SYMCOLL_ERR_INVALID_PARAM)
        if (any(b /= 7)) call fail('a refused call changed the receive buffer')
        call symcoll_allreduce(a, b, n, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
        call expect_status('allreduce real64 again', ierr, SYMCOLL_OK)
        ! a non-contiguous section is refused
        b = 7
        call symcoll_allreduce(a(1:n:2), b(1:n:2), (n + 1) / 2, SYMCOLL_FLOAT64, &
                               SYMCOLL_SUM, comm, ierr)
        call expect_status('non-contiguous section', ierr, SYMCOLL_ERR_INVALID_PARAM)
        ! a contiguous section is a buffer
        call symcoll_allreduce(a(11:20), b(11:20), 10, SYMCOLL_FLOAT64, SYMCOLL_MAX, comm, ierr)
        call expect_status('contiguous section', ierr, SYMCOLL_OK)
        if (any(b(11:20) /= 1) .or. b(10) /= 7 .or. b(21) /= 7) call fail('section result')
        ! a negative count, an invalid type
        call symcoll_allreduce(a, b, -1, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
        call expect_status('negative count', ierr, SYMCOLL_ERR_INVALID_PARAM)
        call symcoll_allreduce(a, b, n, SYMCOLL_DTYPE_LAST, SYMCOLL_SUM, comm, ierr)
        call expect_status('invalid dtype', ierr, SYMCOLL_ERR_INVALID_PARAM)
    end subroutine test_shapes_and_checks

    subroutine test_symmetric_memory()
        type(c_ptr) :: p
        real(real64), pointer :: s(:)
        type(symcoll_pool_attr_t) :: attr
        integer :: i
        call symcoll_mem_alloc(comm, int(n * 8, int64), SYMCOLL_MEM_HOST, p, ierr)
        call expect_status('symcoll_mem_alloc', ierr, SYMCOLL_OK)
        if (ierr /= SYMCOLL_OK) return
        call c_f_pointer(p, s, [n])
        do i = 1, n
            s(i) = sval(i, rank)
        end do
        call symcoll_allreduce_ptr(p, p, n, SYMCOLL_FLOAT64, SYMCOLL_SUM, comm, ierr)
        call expect_status('symcoll_allreduce_ptr in place', ierr, SYMCOLL_OK)
        do i = 1, n
            if (s(i) /= real(expected(SYMCOLL_SUM, i, .false.), real64)) then
                call fail('symmetric memory sum')
                exit
            end if
        end do
        attr%field_mask = ior(SYMCOLL_POOL_ATTR_FIELD_IN_USE, SYMCOLL_POOL_ATTR_FIELD_MAPPED)
        call symcoll_pool_query(comm, SYMCOLL_MEM_HOST, attr, ierr)
        call expect_status('symcoll_pool_query', ierr, SYMCOLL_OK)
        if (attr%in_use < n * 8 .or. attr%mapped < attr%in_use) call fail('pool attributes')
        call symcoll_mem_free(comm, p, ierr)
        call expect_status('symcoll_mem_free', ierr, SYMCOLL_OK)
        call symcoll_mem_free(comm, p, ierr)
        call expect_status('double symcoll_mem_free', ierr, SYMCOLL_ERR_INVALID_PARAM)
        call symcoll_pool_reserve(comm, 1048576_int64, SYMCOLL_MEM_HOST, ierr)
        call expect_status('symcoll_pool_reserve', ierr, SYMCOLL_OK)
        call symcoll_pool_reserve(comm, 0_int64, SYMCOLL_MEM_HOST, ierr)
        call expect_status('symcoll_pool_reserve of 0 bytes', ierr, SYMCOLL_ERR_INVALID_PARAM)
        call symcoll_pool_trim(comm, SYMCOLL_MEM_HOST, ierr)
        call expect_status('symcoll_pool_trim', ierr, SYMCOLL_OK)
    end subroutine test_symmetric_memory

    ! even and odd ranks, each part ordered by descending rank, and an all-reduce of
    ! the ranks on it; then a split in which rank 0 joins none
    subroutine test_split()
        type(symcoll_comm) :: part
        integer :: prank, psize, want_rank, want_size, r
        integer(int32) :: x, y, want_sum

        call symcoll_comm_split(comm, mod(rank, 2), -rank, part, ierr)
        call expect_status('symcoll_comm_split', ierr, SYMCOLL_OK)
        if (ierr /= SYMCOLL_OK) return
        want_rank = 0
        want_size = 0
        want_sum = 0
        do r = mod(rank, 2), nranks - 1, 2
            want_size = want_size + 1
            want_sum = want_sum + r
            if (r > rank) want_rank = want_rank + 1
        end do
        call symcoll_comm_rank(part, prank)
        call symcoll_comm_size(part, psize)
        if (prank /= want_rank .or. psize /= want_size) call fail('split: rank or size')
        x = rank
        y = -1
        call symcoll_allreduce(x, y, 1, SYMCOLL_INT32, SYMCOLL_SUM, part, ierr)
        call expect_status('allreduce on a split', ierr, SYMCOLL_OK)
        if (y /= want_sum) call fail('allreduce on a split: sum')
        call symcoll_comm_destroy(part, ierr)
        call expect_status('symcoll_comm_destroy of a split', ierr, SYMCOLL_OK)

        call symcoll_comm_split(comm, merge(SYMCOLL_SPLIT_NOCOLOR, 0, rank == 0), rank, &
                                part, ierr, timeout_sec=60.0_c_double)
        call expect_status('symcoll_comm_split with no color', ierr, SYMCOLL_OK)
        if (ierr /= SYMCOLL_OK) return
        if (rank == 0) then
            if (c_associated(part%handle)) call fail('SYMCOLL_SPLIT_NOCOLOR: not a null handle')
        else
            call symcoll_comm_size(part, psize)
            if (psize /= nranks - 1) call fail('split without rank 0: size')
            call symcoll_comm_destroy(part, ierr)
            call expect_status('symcoll_comm_destroy of a split', ierr, SYMCOLL_OK)
        end if
    end subroutine test_split

    ! with every rank alive, the shrunk communicator holds them all in comm's order
    subroutine test_shrink()
        type(symcoll_comm) :: live
        integer :: lrank, lsize

        call symcoll_comm_shrink(comm, live, ierr)
        call expect_status('symcoll_comm_shrink', ierr, SYMCOLL_OK)
        if (ierr /= SYMCOLL_OK) return
        call symcoll_comm_rank(live, lrank)
        call symcoll_comm_size(live, lsize)
        if (lrank /= rank .or. lsize /= nranks) call fail('shrink: rank or size')
        call symcoll_comm_destroy(live, ierr)
        call expect_status('symcoll_comm_destroy of a shrink', ierr, SYMCOLL_OK)
    end subroutine test_shrink

    subroutine test_info()
        integer :: major, minor, patch, u
        character(len=32) :: v
        character(len=256) :: line
        character(len=:), allocatable :: layout
        integer :: lines
        call symcoll_get_version(major, minor, patch)
        write (v, '(i0,a,i0,a,i0)') major, '.', minor, '.', patch
        if (symcoll_version_string() /= trim(v)) call fail('version string')
        if (index(symcoll_build_info(), 'UCX') == 0) call fail('build info')
        if (symcoll_status_string(SYMCOLL_OK) == '') call fail('status string')
        if (symcoll_status_string(SYMCOLL_ERR_LAST) == symcoll_status_string(SYMCOLL_OK)) &
            call fail('status string of a non-code')
        if (symcoll_dtype_size(SYMCOLL_FLOAT64) /= 8 .or. symcoll_dtype_size(99) /= 0) &
            call fail('dtype size')
        if (symcoll_dtype_name(SYMCOLL_BFLOAT16) /= 'bfloat16' .or. &
            symcoll_dtype_name(-1) /= '') call fail('dtype name')
        if (symcoll_op_name(SYMCOLL_AVG) /= 'avg') call fail('op name')
        ! the reports go to a Fortran unit
        open (newunit=u, status='scratch', action='readwrite')
        call symcoll_config_print(SYMCOLL_CONFIG_PRINT_DOC, u, ierr)
        call expect_status('symcoll_config_print', ierr, SYMCOLL_OK)
        call symcoll_comm_print_decisions(comm, u, ierr)
        call expect_status('symcoll_comm_print_decisions', ierr, SYMCOLL_OK)
        ! the per-call algorithm and the layout of tuning files
        call symcoll_comm_set_algo(comm, 'no-such-algo', ierr)
        call expect_status('symcoll_comm_set_algo, unknown', ierr, SYMCOLL_ERR_INVALID_PARAM)
        call symcoll_comm_set_algo(comm, 'auto', ierr)
        call expect_status('symcoll_comm_set_algo', ierr, SYMCOLL_OK)
        call symcoll_comm_layout(comm, layout, ierr)
        call expect_status('symcoll_comm_layout', ierr, SYMCOLL_OK)
        if (index(layout, 'nodes=') /= 1) call fail('layout: '//layout)
        call symcoll_comm_print_topology(comm, u, ierr)
        call expect_status('symcoll_comm_print_topology', ierr, SYMCOLL_OK)
        rewind (u)
        lines = 0
        do
            read (u, '(a)', end=10) line
            if (index(line, 'SYMCOLL_TIMEOUT') == 1) lines = lines + 1
        end do
10      close (u)
        if (lines /= 1) call fail('SYMCOLL_TIMEOUT not printed once by symcoll_config_print')
    end subroutine test_info

end program test_fortran
