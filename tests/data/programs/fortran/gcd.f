C     Fixed-form FORTRAN 77: greatest common divisors with a GOTO loop and a function.
      PROGRAM GCDS
      INTEGER I, IGCD
      DO 10 I = 1, 10
         PRINT *, I, IGCD(I * 12, 18)
   10 CONTINUE
      END

      INTEGER FUNCTION IGCD(A, B)
      INTEGER A, B, M, N, T
      M = A
      N = B
   20 IF (N .EQ. 0) GOTO 30
      T = MOD(M, N)
      M = N
      N = T
      GOTO 20
   30 IGCD = M
      RETURN
      END
