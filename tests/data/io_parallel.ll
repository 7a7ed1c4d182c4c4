; Parallel edges: %k feeds both value operands of one select (two DATA edges, positions 1 and 2, same two nodes),
; and the constant i32 1 is both operands of one add (positions 0 and 1).
source_filename = "io_parallel.ll"

define i32 @pick(i32 %k) {
  %r = select i1 true, i32 %k, i32 %k
  %s = add i32 1, 1
  %t = add i32 %r, %s
  ret i32 %t
}
