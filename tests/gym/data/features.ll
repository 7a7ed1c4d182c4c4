; Hand-counted InstCount and Autophase features (tests/gym/test_features.py): a loop with phi nodes, a switch with
; two cases to one block, an alloca with its implicit `i32 1` size, a call of an int function.
define i32 @f(i32 %n, i64 %m) {
entry:
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %loop, label %exit
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 1, %entry ], [ %acc2, %loop ]
  %next = add i32 %i, 1
  %acc2 = mul i64 %acc, %m
  %done = icmp eq i32 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = phi i64 [ 0, %entry ], [ %acc2, %loop ]
  %t = trunc i64 %r to i32
  %x = call i32 @g(i32 %t)
  switch i32 %x, label %d [ i32 1, label %a
                            i32 2, label %a ]
a:
  ret i32 1
d:
  %p = alloca i32
  store i32 %x, ptr %p
  %l = load i32, ptr %p
  ret i32 %l
}

declare i32 @g(i32)
