; A dot product in LLVM IR (written by hand): a loop with phi nodes, loads, a multiply-add and a return.
source_filename = "dot_product.ll"
target triple = "x86_64-pc-linux-gnu"

define double @dot(ptr %a, ptr %b, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %sum = phi double [ 0.0, %entry ], [ %acc, %loop ]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %x = load double, ptr %pa, align 8
  %y = load double, ptr %pb, align 8
  %prod = fmul double %x, %y
  %acc = fadd double %sum, %prod
  %next = add nuw i64 %i, 1
  %more = icmp ult i64 %next, %n
  br i1 %more, label %loop, label %done

done:
  %result = phi double [ 0.0, %entry ], [ %acc, %loop ]
  ret double %result
}
