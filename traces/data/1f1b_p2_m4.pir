terasim-pir 1
model cpu-small
layers 4
sequence 128
devices 2
batch 4
shape strategy=1f1b dp=1 pp=2 tp=1 v=1
# device 0
op F.s0.m0.t0-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-128
op SF.s0.m0.t0-128 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-128 peer=1 tensor=act.l2.m0.t0-128 bytes=65536 after=F.s0.m0.t0-128
op F.s0.m1.t0-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-128
op SF.s0.m1.t0-128 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=0-128 peer=1 tensor=act.l2.m1.t0-128 bytes=65536 after=F.s0.m1.t0-128
op RB.s0.m0.t0-128 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-128 peer=1 tensor=grad.l2.m0.t0-128 bytes=65536
op B.s0.m0.t0-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-128 after=RB.s0.m0.t0-128
op F.s0.m2.t0-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-128
op SF.s0.m2.t0-128 SEND dev=0 stream=send stage=0 mb=2 rows=1 tokens=0-128 peer=1 tensor=act.l2.m2.t0-128 bytes=65536 after=F.s0.m2.t0-128
op RB.s0.m1.t0-128 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=0-128 peer=1 tensor=grad.l2.m1.t0-128 bytes=65536
op B.s0.m1.t0-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-128 after=RB.s0.m1.t0-128
op F.s0.m3.t0-128 FWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-128
op SF.s0.m3.t0-128 SEND dev=0 stream=send stage=0 mb=3 rows=1 tokens=0-128 peer=1 tensor=act.l2.m3.t0-128 bytes=65536 after=F.s0.m3.t0-128
op RB.s0.m2.t0-128 RECV dev=0 stream=recv stage=0 mb=2 rows=1 tokens=0-128 peer=1 tensor=grad.l2.m2.t0-128 bytes=65536
op B.s0.m2.t0-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-128 after=RB.s0.m2.t0-128
op RB.s0.m3.t0-128 RECV dev=0 stream=recv stage=0 mb=3 rows=1 tokens=0-128 peer=1 tensor=grad.l2.m3.t0-128 bytes=65536
op B.s0.m3.t0-128 BWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-128 after=RB.s0.m3.t0-128
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
# device 1
op RF.s1.m0.t0-128 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-128 peer=0 tensor=act.l2.m0.t0-128 bytes=65536
op F.s1.m0.t0-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-128 after=RF.s1.m0.t0-128
op B.s1.m0.t0-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-128
op SB.s1.m0.t0-128 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-128 peer=0 tensor=grad.l2.m0.t0-128 bytes=65536 after=B.s1.m0.t0-128
op RF.s1.m1.t0-128 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-128 peer=0 tensor=act.l2.m1.t0-128 bytes=65536
op F.s1.m1.t0-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-128 after=RF.s1.m1.t0-128
op B.s1.m1.t0-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-128
op SB.s1.m1.t0-128 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-128 peer=0 tensor=grad.l2.m1.t0-128 bytes=65536 after=B.s1.m1.t0-128
op RF.s1.m2.t0-128 RECV dev=1 stream=recv stage=1 mb=2 rows=1 tokens=0-128 peer=0 tensor=act.l2.m2.t0-128 bytes=65536
op F.s1.m2.t0-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=2 rows=1 tokens=0-128 after=RF.s1.m2.t0-128
op B.s1.m2.t0-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=2 rows=1 tokens=0-128
op SB.s1.m2.t0-128 SEND dev=1 stream=send stage=1 mb=2 rows=1 tokens=0-128 peer=0 tensor=grad.l2.m2.t0-128 bytes=65536 after=B.s1.m2.t0-128
op RF.s1.m3.t0-128 RECV dev=1 stream=recv stage=1 mb=3 rows=1 tokens=0-128 peer=0 tensor=act.l2.m3.t0-128 bytes=65536
op F.s1.m3.t0-128 FWD dev=1 stream=compute stage=1 layers=2-4 mb=3 rows=1 tokens=0-128 after=RF.s1.m3.t0-128
op B.s1.m3.t0-128 BWD dev=1 stream=compute stage=1 layers=2-4 mb=3 rows=1 tokens=0-128
op SB.s1.m3.t0-128 SEND dev=1 stream=send stage=1 mb=3 rows=1 tokens=0-128 peer=0 tensor=grad.l2.m3.t0-128 bytes=65536 after=B.s1.m3.t0-128
op OPT.s1.d0 OPTIMIZER dev=1 stream=compute stage=1 layers=2-4
