terasim-pir 1
model tiny
layers 4
sequence 32
devices 2
batch 1
shape strategy=terapipe dp=1 pp=2 tp=1 v=1
# device 0
op RB.s0.m0.t16-32 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=16-32 peer=1 tensor=grad.l2.m0.t16-32 bytes=2048
op RB.s0.m0.t0-16 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-16 peer=1 tensor=grad.l2.m0.t0-16 bytes=2048
op F.s0.m0.t16-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=16-32
op F.s0.m0.t0-16 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-16
op B.s0.m0.t16-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=16-32 after=RB.s0.m0.t16-32
op B.s0.m0.t0-16 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-16 after=RB.s0.m0.t0-16
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
op SF.s0.m0.t0-16 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-16 peer=1 tensor=act.l2.m0.t0-16 bytes=2048 after=F.s0.m0.t0-16
op SF.s0.m0.t16-32 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=16-32 peer=1 tensor=act.l2.m0.t16-32 bytes=2048 after=F.s0.m0.t16-32
# device 1
op RF.s1.m0.t0-16 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-16 peer=0 tensor=act.l2.m0.t0-16 bytes=2048
op RF.s1.m0.t16-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=16-32 peer=0 tensor=act.l2.m0.t16-32 bytes=2048
op F.s1.m0.t0-16 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-16 after=RF.s1.m0.t0-16
op F.s1.m0.t16-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=16-32 after=RF.s1.m0.t16-32
op B.s1.m0.t16-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=16-32
op B.s1.m0.t0-16 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-16
op OPT.s1.d0 OPTIMIZER dev=1 stream=compute stage=1 layers=2-4
op SB.s1.m0.t16-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=16-32 peer=0 tensor=grad.l2.m0.t16-32 bytes=2048 after=B.s1.m0.t16-32
op SB.s1.m0.t0-16 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-16 peer=0 tensor=grad.l2.m0.t0-16 bytes=2048 after=B.s1.m0.t0-16
