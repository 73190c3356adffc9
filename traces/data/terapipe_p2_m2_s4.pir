terasim-pir 1
model cpu-small
layers 4
sequence 128
devices 2
batch 2
shape strategy=terapipe dp=1 pp=2 tp=1 v=1
# device 0
op F.s0.m0.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32
op SF.s0.m0.t0-32 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=act.l2.m0.t0-32 bytes=16384 after=F.s0.m0.t0-32
op F.s0.m0.t32-64 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=32-64
op SF.s0.m0.t32-64 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=32-64 peer=1 tensor=act.l2.m0.t32-64 bytes=16384 after=F.s0.m0.t32-64
op F.s0.m0.t64-96 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=64-96
op SF.s0.m0.t64-96 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=64-96 peer=1 tensor=act.l2.m0.t64-96 bytes=16384 after=F.s0.m0.t64-96
op F.s0.m0.t96-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=96-128
op SF.s0.m0.t96-128 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=96-128 peer=1 tensor=act.l2.m0.t96-128 bytes=16384 after=F.s0.m0.t96-128
op F.s0.m1.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32
op SF.s0.m1.t0-32 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=act.l2.m1.t0-32 bytes=16384 after=F.s0.m1.t0-32
op F.s0.m1.t32-64 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=32-64
op SF.s0.m1.t32-64 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=32-64 peer=1 tensor=act.l2.m1.t32-64 bytes=16384 after=F.s0.m1.t32-64
op F.s0.m1.t64-96 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=64-96
op SF.s0.m1.t64-96 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=64-96 peer=1 tensor=act.l2.m1.t64-96 bytes=16384 after=F.s0.m1.t64-96
op F.s0.m1.t96-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=96-128
op SF.s0.m1.t96-128 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=96-128 peer=1 tensor=act.l2.m1.t96-128 bytes=16384 after=F.s0.m1.t96-128
op RB.s0.m1.t96-128 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=96-128 peer=1 tensor=grad.l2.m1.t96-128 bytes=16384
op B.s0.m1.t96-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=96-128 after=RB.s0.m1.t96-128
op RB.s0.m1.t64-96 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=64-96 peer=1 tensor=grad.l2.m1.t64-96 bytes=16384
op B.s0.m1.t64-96 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=64-96 after=RB.s0.m1.t64-96
op RB.s0.m1.t32-64 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=32-64 peer=1 tensor=grad.l2.m1.t32-64 bytes=16384
op B.s0.m1.t32-64 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=32-64 after=RB.s0.m1.t32-64
op RB.s0.m1.t0-32 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m1.t0-32 bytes=16384
op B.s0.m1.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32 after=RB.s0.m1.t0-32
op RB.s0.m0.t96-128 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=96-128 peer=1 tensor=grad.l2.m0.t96-128 bytes=16384
op B.s0.m0.t96-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=96-128 after=RB.s0.m0.t96-128
op RB.s0.m0.t64-96 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=64-96 peer=1 tensor=grad.l2.m0.t64-96 bytes=16384
op B.s0.m0.t64-96 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=64-96 after=RB.s0.m0.t64-96
op RB.s0.m0.t32-64 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=32-64 peer=1 tensor=grad.l2.m0.t32-64 bytes=16384
op B.s0.m0.t32-64 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=32-64 after=RB.s0.m0.t32-64
op RB.s0.m0.t0-32 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m0.t0-32 bytes=16384
op B.s0.m0.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32 after=RB.s0.m0.t0-32
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
# device 1
op RF.s1.m0.t0-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=act.l2.m0.t0-32 bytes=16384
op F.s1.m0.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-32 after=RF.s1.m0.t0-32
op RF.s1.m0.t32-64 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=32-64 peer=0 tensor=act.l2.m0.t32-64 bytes=16384
op F.s1.m0.t32-64 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=32-64 after=RF.s1.m0.t32-64
op RF.s1.m0.t64-96 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=64-96 peer=0 tensor=act.l2.m0.t64-96 bytes=16384
op F.s1.m0.t64-96 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=64-96 after=RF.s1.m0.t64-96
op RF.s1.m0.t96-128 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=96-128 peer=0 tensor=act.l2.m0.t96-128 bytes=16384
op F.s1.m0.t96-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=96-128 after=RF.s1.m0.t96-128
op RF.s1.m1.t0-32 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=act.l2.m1.t0-32 bytes=16384
op F.s1.m1.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-32 after=RF.s1.m1.t0-32
op RF.s1.m1.t32-64 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=32-64 peer=0 tensor=act.l2.m1.t32-64 bytes=16384
op F.s1.m1.t32-64 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=32-64 after=RF.s1.m1.t32-64
op RF.s1.m1.t64-96 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=64-96 peer=0 tensor=act.l2.m1.t64-96 bytes=16384
op F.s1.m1.t64-96 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=64-96 after=RF.s1.m1.t64-96
op RF.s1.m1.t96-128 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=96-128 peer=0 tensor=act.l2.m1.t96-128 bytes=16384
op F.s1.m1.t96-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=96-128 after=RF.s1.m1.t96-128
op B.s1.m1.t96-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=96-128
op SB.s1.m1.t96-128 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=96-128 peer=0 tensor=grad.l2.m1.t96-128 bytes=16384 after=B.s1.m1.t96-128
op B.s1.m1.t64-96 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=64-96
op SB.s1.m1.t64-96 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=64-96 peer=0 tensor=grad.l2.m1.t64-96 bytes=16384 after=B.s1.m1.t64-96
op B.s1.m1.t32-64 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=32-64
op SB.s1.m1.t32-64 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=32-64 peer=0 tensor=grad.l2.m1.t32-64 bytes=16384 after=B.s1.m1.t32-64
op B.s1.m1.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-32
op SB.s1.m1.t0-32 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m1.t0-32 bytes=16384 after=B.s1.m1.t0-32
op B.s1.m0.t96-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=96-128
op SB.s1.m0.t96-128 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=96-128 peer=0 tensor=grad.l2.m0.t96-128 bytes=16384 after=B.s1.m0.t96-128
op B.s1.m0.t64-96 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=64-96
op SB.s1.m0.t64-96 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=64-96 peer=0 tensor=grad.l2.m0.t64-96 bytes=16384 after=B.s1.m0.t64-96
op B.s1.m0.t32-64 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=32-64
op SB.s1.m0.t32-64 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=32-64 peer=0 tensor=grad.l2.m0.t32-64 bytes=16384 after=B.s1.m0.t32-64
op B.s1.m0.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-32
op SB.s1.m0.t0-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m0.t0-32 bytes=16384 after=B.s1.m0.t0-32
op OPT.s1.d0 OPTIMIZER dev=1 stream=compute stage=1 layers=2-4
