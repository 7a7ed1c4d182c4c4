! Jacobi iteration for the 2-D Laplace equation until the update is small.
subroutine jacobi(n, u, tol, iters)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: u(n, n)
  real(8), intent(in) :: tol
  integer, intent(out) :: iters
  real(8) :: unew(n, n), diff
  integer :: i, j
  iters = 0
  unew = u
  do
    diff = 0.0d0
    do j = 2, n - 1
      do i = 2, n - 1
        unew(i, j) = 0.25d0 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
        diff = max(diff, abs(unew(i, j) - u(i, j)))
      end do
    end do
    u = unew
    iters = iters + 1
    if (diff < tol .or. iters >= 1000) exit
  end do
end subroutine jacobi
