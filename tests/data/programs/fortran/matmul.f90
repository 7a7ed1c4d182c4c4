! Matrix product by explicit loops, checked against the intrinsic; a derived type and a select case.
program matrix_product
  implicit none
  type :: matrix
    integer :: rows, cols
    real, allocatable :: v(:, :)
  end type matrix
  type(matrix) :: a, b, c
  integer :: i, j, k
  a%rows = 3; a%cols = 4; b%rows = 4; b%cols = 2
  allocate(a%v(a%rows, a%cols), b%v(b%rows, b%cols), c%v(a%rows, b%cols))
  do j = 1, a%cols
    do i = 1, a%rows
      a%v(i, j) = real(i + j)
    end do
  end do
  b%v = 1.5
  c%v = 0.0
  do j = 1, b%cols
    do k = 1, a%cols
      do i = 1, a%rows
        c%v(i, j) = c%v(i, j) + a%v(i, k) * b%v(k, j)
      end do
    end do
  end do
  select case (count(abs(c%v - matmul(a%v, b%v)) > 1e-5))
  case (0)
    print *, 'ok'
  case default
    print *, 'mismatch'
  end select
end program matrix_product
