! A module of vector subroutines and functions: loops, arrays, intent, an elemental function.
module vecops
  implicit none
contains
  subroutine axpy(n, a, x, y)
    integer, intent(in) :: n
    real, intent(in) :: a, x(n)
    real, intent(inout) :: y(n)
    integer :: i
    do i = 1, n
      y(i) = a * x(i) + y(i)
    end do
  end subroutine axpy

  real function dot(n, x, y)
    integer, intent(in) :: n
    real, intent(in) :: x(n), y(n)
    integer :: i
    dot = 0.0
    do i = 1, n
      dot = dot + x(i) * y(i)
    end do
  end function dot

  elemental real function clamp(v, lo, hi)
    real, intent(in) :: v, lo, hi
    clamp = min(max(v, lo), hi)
  end function clamp
end module vecops
