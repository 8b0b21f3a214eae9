"""Writes a TreeLSTM leaf cell, or instances that run its forward and adjoint
modules (as dynb-grad writes them) side by side, for adjoint-plans.test.

usage: adjoint_plan.py cell H | instances H N
The cell's forward module returns (h, c) and five saved values of width H;
its adjoint takes (dh, dc) and those and returns (dx [H], dz [3H]).
"""
import sys

what, h = sys.argv[1], int(sys.argv[2])
t = "tensor<%dxf32>" % h
t3 = "tensor<%dxf32>" % (3 * h)
if what == "cell":
    print("dynb.param @E : tensor<20x%dxf32>" % h)
    print("dynb.param @W : tensor<%dx%dxf32>" % (3 * h, h))
    print("dynb.param @b : tensor<%dxf32>" % (3 * h))
    print("func.func @leaf(%%x: %s) -> (%s, %s) {" % (t, t, t))
    print("  %%y = dynb.linear %%x weight @W bias @b : %s -> %s" % (t, t3))
    for name, off in (("i", 0), ("o", h), ("u", 2 * h)):
        print("  %%%s = dynb.slice %%y [%d, %d] : %s -> %s" % (name, off, h, t3, t))
    print("  %%si = dynb.sigmoid %%i : %s" % t)
    print("  %%so = dynb.sigmoid %%o : %s" % t)
    print("  %%tu = dynb.tanh %%u : %s" % t)
    print("  %%c = dynb.mul %%si, %%tu : %s" % t)
    print("  %%tc = dynb.tanh %%c : %s" % t)
    print("  %%h = dynb.mul %%so, %%tc : %s" % t)
    print("  return %%h, %%c : %s, %s" % (t, t))
    print("}")
else:
    for i in range(int(sys.argv[3])):
        print("dynb.instance {")
        for name, row in (("x", i % 20), ("dh", (i + 7) % 20), ("dc", (i + 13) % 20)):
            print("  %%%s = dynb.embedding @E [%d] : %s" % (name, row, t))
        print("  %%h, %%c, %%s0, %%s1, %%s2, %%s3, %%s4 = dynb.call @leaf_fwd(%%x) "
              ": (%s) -> (%s)" % (t, ", ".join([t] * 7)))
        print("  %%dx, %%dz = dynb.call @leaf_adj(%%dh, %%dc, %%s0, %%s1, %%s2, %%s3, "
              "%%s4) : (%s) -> (%s, %s)" % (", ".join([t] * 7), t, t3))
        # A second use of dx: an instance-level chain after the adjoint.
        print("  %%dx2, %%dz2 = dynb.call @leaf_adj(%%dx, %%h, %%s0, %%s1, %%s2, "
              "%%s3, %%s4) : (%s) -> (%s, %s)" % (", ".join([t] * 7), t, t3))
        print("  dynb.output %%h, %%dx2, %%dz : %s, %s, %s" % (t, t, t3))
        print("}")
