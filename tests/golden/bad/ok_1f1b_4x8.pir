terasim-pir 1
model tiny
layers 8
sequence 32
devices 4
batch 8
shape strategy=1f1b dp=1 pp=4 tp=1 v=1
# device 0
op RB.s0.m0.t0-32 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m0.t0-32 bytes=4096
op RB.s0.m1.t0-32 RECV dev=0 stream=recv stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m1.t0-32 bytes=4096
op RB.s0.m2.t0-32 RECV dev=0 stream=recv stage=0 mb=2 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m2.t0-32 bytes=4096
op RB.s0.m3.t0-32 RECV dev=0 stream=recv stage=0 mb=3 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m3.t0-32 bytes=4096
op RB.s0.m4.t0-32 RECV dev=0 stream=recv stage=0 mb=4 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m4.t0-32 bytes=4096
op RB.s0.m5.t0-32 RECV dev=0 stream=recv stage=0 mb=5 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m5.t0-32 bytes=4096
op RB.s0.m6.t0-32 RECV dev=0 stream=recv stage=0 mb=6 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m6.t0-32 bytes=4096
op RB.s0.m7.t0-32 RECV dev=0 stream=recv stage=0 mb=7 rows=1 tokens=0-32 peer=1 tensor=grad.l2.m7.t0-32 bytes=4096
op F.s0.m0.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32
op F.s0.m1.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32
op F.s0.m2.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-32
op F.s0.m3.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-32
op B.s0.m0.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=0 rows=1 tokens=0-32 after=RB.s0.m0.t0-32
op F.s0.m4.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=4 rows=1 tokens=0-32
op B.s0.m1.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=1 rows=1 tokens=0-32 after=RB.s0.m1.t0-32
op F.s0.m5.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=5 rows=1 tokens=0-32
op B.s0.m2.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=2 rows=1 tokens=0-32 after=RB.s0.m2.t0-32
op F.s0.m6.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=6 rows=1 tokens=0-32
op B.s0.m3.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=3 rows=1 tokens=0-32 after=RB.s0.m3.t0-32
op F.s0.m7.t0-32 FWD dev=0 stream=compute stage=0 layers=0-2 mb=7 rows=1 tokens=0-32
op B.s0.m4.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=4 rows=1 tokens=0-32 after=RB.s0.m4.t0-32
op B.s0.m5.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=5 rows=1 tokens=0-32 after=RB.s0.m5.t0-32
op B.s0.m6.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=6 rows=1 tokens=0-32 after=RB.s0.m6.t0-32
op B.s0.m7.t0-32 BWD dev=0 stream=compute stage=0 layers=0-2 mb=7 rows=1 tokens=0-32 after=RB.s0.m7.t0-32
op OPT.s0.d0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
op SF.s0.m0.t0-32 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-32 peer=1 tensor=act.l2.m0.t0-32 bytes=4096 after=F.s0.m0.t0-32
op SF.s0.m1.t0-32 SEND dev=0 stream=send stage=0 mb=1 rows=1 tokens=0-32 peer=1 tensor=act.l2.m1.t0-32 bytes=4096 after=F.s0.m1.t0-32
op SF.s0.m2.t0-32 SEND dev=0 stream=send stage=0 mb=2 rows=1 tokens=0-32 peer=1 tensor=act.l2.m2.t0-32 bytes=4096 after=F.s0.m2.t0-32
op SF.s0.m3.t0-32 SEND dev=0 stream=send stage=0 mb=3 rows=1 tokens=0-32 peer=1 tensor=act.l2.m3.t0-32 bytes=4096 after=F.s0.m3.t0-32
op SF.s0.m4.t0-32 SEND dev=0 stream=send stage=0 mb=4 rows=1 tokens=0-32 peer=1 tensor=act.l2.m4.t0-32 bytes=4096 after=F.s0.m4.t0-32
op SF.s0.m5.t0-32 SEND dev=0 stream=send stage=0 mb=5 rows=1 tokens=0-32 peer=1 tensor=act.l2.m5.t0-32 bytes=4096 after=F.s0.m5.t0-32
op SF.s0.m6.t0-32 SEND dev=0 stream=send stage=0 mb=6 rows=1 tokens=0-32 peer=1 tensor=act.l2.m6.t0-32 bytes=4096 after=F.s0.m6.t0-32
op SF.s0.m7.t0-32 SEND dev=0 stream=send stage=0 mb=7 rows=1 tokens=0-32 peer=1 tensor=act.l2.m7.t0-32 bytes=4096 after=F.s0.m7.t0-32
# device 1
op RF.s1.m0.t0-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=act.l2.m0.t0-32 bytes=4096
op RF.s1.m1.t0-32 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=act.l2.m1.t0-32 bytes=4096
op RF.s1.m2.t0-32 RECV dev=1 stream=recv stage=1 mb=2 rows=1 tokens=0-32 peer=0 tensor=act.l2.m2.t0-32 bytes=4096
op RB.s1.m0.t0-32 RECV dev=1 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m0.t0-32 bytes=4096
op RF.s1.m3.t0-32 RECV dev=1 stream=recv stage=1 mb=3 rows=1 tokens=0-32 peer=0 tensor=act.l2.m3.t0-32 bytes=4096
op RB.s1.m1.t0-32 RECV dev=1 stream=recv stage=1 mb=1 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m1.t0-32 bytes=4096
op RF.s1.m4.t0-32 RECV dev=1 stream=recv stage=1 mb=4 rows=1 tokens=0-32 peer=0 tensor=act.l2.m4.t0-32 bytes=4096
op RB.s1.m2.t0-32 RECV dev=1 stream=recv stage=1 mb=2 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m2.t0-32 bytes=4096
op RF.s1.m5.t0-32 RECV dev=1 stream=recv stage=1 mb=5 rows=1 tokens=0-32 peer=0 tensor=act.l2.m5.t0-32 bytes=4096
op RB.s1.m3.t0-32 RECV dev=1 stream=recv stage=1 mb=3 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m3.t0-32 bytes=4096
op RF.s1.m6.t0-32 RECV dev=1 stream=recv stage=1 mb=6 rows=1 tokens=0-32 peer=0 tensor=act.l2.m6.t0-32 bytes=4096
op RB.s1.m4.t0-32 RECV dev=1 stream=recv stage=1 mb=4 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m4.t0-32 bytes=4096
op RF.s1.m7.t0-32 RECV dev=1 stream=recv stage=1 mb=7 rows=1 tokens=0-32 peer=0 tensor=act.l2.m7.t0-32 bytes=4096
op RB.s1.m5.t0-32 RECV dev=1 stream=recv stage=1 mb=5 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m5.t0-32 bytes=4096
op RB.s1.m6.t0-32 RECV dev=1 stream=recv stage=1 mb=6 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m6.t0-32 bytes=4096
op RB.s1.m7.t0-32 RECV dev=1 stream=recv stage=1 mb=7 rows=1 tokens=0-32 peer=2 tensor=grad.l4.m7.t0-32 bytes=4096
op F.s1.m0.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-32 after=RF.s1.m0.t0-32
op F.s1.m1.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-32 after=RF.s1.m1.t0-32
op F.s1.m2.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=2 rows=1 tokens=0-32 after=RF.s1.m2.t0-32
op B.s1.m0.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=0 rows=1 tokens=0-32 after=RB.s1.m0.t0-32
op F.s1.m3.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=3 rows=1 tokens=0-32 after=RF.s1.m3.t0-32
op B.s1.m1.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=1 rows=1 tokens=0-32 after=RB.s1.m1.t0-32
op F.s1.m4.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=4 rows=1 tokens=0-32 after=RF.s1.m4.t0-32
op B.s1.m2.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=2 rows=1 tokens=0-32 after=RB.s1.m2.t0-32
op F.s1.m5.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=5 rows=1 tokens=0-32 after=RF.s1.m5.t0-32
op B.s1.m3.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=3 rows=1 tokens=0-32 after=RB.s1.m3.t0-32
op F.s1.m6.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=6 rows=1 tokens=0-32 after=RF.s1.m6.t0-32
op B.s1.m4.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=4 rows=1 tokens=0-32 after=RB.s1.m4.t0-32
op F.s1.m7.t0-32 FWD dev=1 stream=compute stage=1 layers=2-4 mb=7 rows=1 tokens=0-32 after=RF.s1.m7.t0-32
op B.s1.m5.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=5 rows=1 tokens=0-32 after=RB.s1.m5.t0-32
op B.s1.m6.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=6 rows=1 tokens=0-32 after=RB.s1.m6.t0-32
op B.s1.m7.t0-32 BWD dev=1 stream=compute stage=1 layers=2-4 mb=7 rows=1 tokens=0-32 after=RB.s1.m7.t0-32
op OPT.s1.d0 OPTIMIZER dev=1 stream=compute stage=1 layers=2-4
op SF.s1.m0.t0-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=2 tensor=act.l4.m0.t0-32 bytes=4096 after=F.s1.m0.t0-32
op SF.s1.m1.t0-32 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-32 peer=2 tensor=act.l4.m1.t0-32 bytes=4096 after=F.s1.m1.t0-32
op SF.s1.m2.t0-32 SEND dev=1 stream=send stage=1 mb=2 rows=1 tokens=0-32 peer=2 tensor=act.l4.m2.t0-32 bytes=4096 after=F.s1.m2.t0-32
op SB.s1.m0.t0-32 SEND dev=1 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m0.t0-32 bytes=4096 after=B.s1.m0.t0-32
op SF.s1.m3.t0-32 SEND dev=1 stream=send stage=1 mb=3 rows=1 tokens=0-32 peer=2 tensor=act.l4.m3.t0-32 bytes=4096 after=F.s1.m3.t0-32
op SB.s1.m1.t0-32 SEND dev=1 stream=send stage=1 mb=1 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m1.t0-32 bytes=4096 after=B.s1.m1.t0-32
op SF.s1.m4.t0-32 SEND dev=1 stream=send stage=1 mb=4 rows=1 tokens=0-32 peer=2 tensor=act.l4.m4.t0-32 bytes=4096 after=F.s1.m4.t0-32
op SB.s1.m2.t0-32 SEND dev=1 stream=send stage=1 mb=2 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m2.t0-32 bytes=4096 after=B.s1.m2.t0-32
op SF.s1.m5.t0-32 SEND dev=1 stream=send stage=1 mb=5 rows=1 tokens=0-32 peer=2 tensor=act.l4.m5.t0-32 bytes=4096 after=F.s1.m5.t0-32
op SB.s1.m3.t0-32 SEND dev=1 stream=send stage=1 mb=3 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m3.t0-32 bytes=4096 after=B.s1.m3.t0-32
op SF.s1.m6.t0-32 SEND dev=1 stream=send stage=1 mb=6 rows=1 tokens=0-32 peer=2 tensor=act.l4.m6.t0-32 bytes=4096 after=F.s1.m6.t0-32
op SB.s1.m4.t0-32 SEND dev=1 stream=send stage=1 mb=4 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m4.t0-32 bytes=4096 after=B.s1.m4.t0-32
op SF.s1.m7.t0-32 SEND dev=1 stream=send stage=1 mb=7 rows=1 tokens=0-32 peer=2 tensor=act.l4.m7.t0-32 bytes=4096 after=F.s1.m7.t0-32
op SB.s1.m5.t0-32 SEND dev=1 stream=send stage=1 mb=5 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m5.t0-32 bytes=4096 after=B.s1.m5.t0-32
op SB.s1.m6.t0-32 SEND dev=1 stream=send stage=1 mb=6 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m6.t0-32 bytes=4096 after=B.s1.m6.t0-32
op SB.s1.m7.t0-32 SEND dev=1 stream=send stage=1 mb=7 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m7.t0-32 bytes=4096 after=B.s1.m7.t0-32
# device 2
op RF.s2.m0.t0-32 RECV dev=2 stream=recv stage=2 mb=0 rows=1 tokens=0-32 peer=1 tensor=act.l4.m0.t0-32 bytes=4096
op RF.s2.m1.t0-32 RECV dev=2 stream=recv stage=2 mb=1 rows=1 tokens=0-32 peer=1 tensor=act.l4.m1.t0-32 bytes=4096
op RB.s2.m0.t0-32 RECV dev=2 stream=recv stage=2 mb=0 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m0.t0-32 bytes=4096
op RF.s2.m2.t0-32 RECV dev=2 stream=recv stage=2 mb=2 rows=1 tokens=0-32 peer=1 tensor=act.l4.m2.t0-32 bytes=4096
op RB.s2.m1.t0-32 RECV dev=2 stream=recv stage=2 mb=1 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m1.t0-32 bytes=4096
op RF.s2.m3.t0-32 RECV dev=2 stream=recv stage=2 mb=3 rows=1 tokens=0-32 peer=1 tensor=act.l4.m3.t0-32 bytes=4096
op RB.s2.m2.t0-32 RECV dev=2 stream=recv stage=2 mb=2 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m2.t0-32 bytes=4096
op RF.s2.m4.t0-32 RECV dev=2 stream=recv stage=2 mb=4 rows=1 tokens=0-32 peer=1 tensor=act.l4.m4.t0-32 bytes=4096
op RB.s2.m3.t0-32 RECV dev=2 stream=recv stage=2 mb=3 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m3.t0-32 bytes=4096
op RF.s2.m5.t0-32 RECV dev=2 stream=recv stage=2 mb=5 rows=1 tokens=0-32 peer=1 tensor=act.l4.m5.t0-32 bytes=4096
op RB.s2.m4.t0-32 RECV dev=2 stream=recv stage=2 mb=4 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m4.t0-32 bytes=4096
op RF.s2.m6.t0-32 RECV dev=2 stream=recv stage=2 mb=6 rows=1 tokens=0-32 peer=1 tensor=act.l4.m6.t0-32 bytes=4096
op RB.s2.m5.t0-32 RECV dev=2 stream=recv stage=2 mb=5 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m5.t0-32 bytes=4096
op RF.s2.m7.t0-32 RECV dev=2 stream=recv stage=2 mb=7 rows=1 tokens=0-32 peer=1 tensor=act.l4.m7.t0-32 bytes=4096
op RB.s2.m6.t0-32 RECV dev=2 stream=recv stage=2 mb=6 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m6.t0-32 bytes=4096
op RB.s2.m7.t0-32 RECV dev=2 stream=recv stage=2 mb=7 rows=1 tokens=0-32 peer=3 tensor=grad.l6.m7.t0-32 bytes=4096
op F.s2.m0.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=0 rows=1 tokens=0-32 after=RF.s2.m0.t0-32
op F.s2.m1.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=1 rows=1 tokens=0-32 after=RF.s2.m1.t0-32
op B.s2.m0.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=0 rows=1 tokens=0-32 after=RB.s2.m0.t0-32
op F.s2.m2.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=2 rows=1 tokens=0-32 after=RF.s2.m2.t0-32
op B.s2.m1.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=1 rows=1 tokens=0-32 after=RB.s2.m1.t0-32
op F.s2.m3.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=3 rows=1 tokens=0-32 after=RF.s2.m3.t0-32
op B.s2.m2.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=2 rows=1 tokens=0-32 after=RB.s2.m2.t0-32
op F.s2.m4.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=4 rows=1 tokens=0-32 after=RF.s2.m4.t0-32
op B.s2.m3.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=3 rows=1 tokens=0-32 after=RB.s2.m3.t0-32
op F.s2.m5.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=5 rows=1 tokens=0-32 after=RF.s2.m5.t0-32
op B.s2.m4.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=4 rows=1 tokens=0-32 after=RB.s2.m4.t0-32
op F.s2.m6.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=6 rows=1 tokens=0-32 after=RF.s2.m6.t0-32
op B.s2.m5.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=5 rows=1 tokens=0-32 after=RB.s2.m5.t0-32
op F.s2.m7.t0-32 FWD dev=2 stream=compute stage=2 layers=4-6 mb=7 rows=1 tokens=0-32 after=RF.s2.m7.t0-32
op B.s2.m6.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=6 rows=1 tokens=0-32 after=RB.s2.m6.t0-32
op B.s2.m7.t0-32 BWD dev=2 stream=compute stage=2 layers=4-6 mb=7 rows=1 tokens=0-32 after=RB.s2.m7.t0-32
op OPT.s2.d0 OPTIMIZER dev=2 stream=compute stage=2 layers=4-6
op SF.s2.m0.t0-32 SEND dev=2 stream=send stage=2 mb=0 rows=1 tokens=0-32 peer=3 tensor=act.l6.m0.t0-32 bytes=4096 after=F.s2.m0.t0-32
op SF.s2.m1.t0-32 SEND dev=2 stream=send stage=2 mb=1 rows=1 tokens=0-32 peer=3 tensor=act.l6.m1.t0-32 bytes=4096 after=F.s2.m1.t0-32
op SB.s2.m0.t0-32 SEND dev=2 stream=send stage=2 mb=0 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m0.t0-32 bytes=4096 after=B.s2.m0.t0-32
op SF.s2.m2.t0-32 SEND dev=2 stream=send stage=2 mb=2 rows=1 tokens=0-32 peer=3 tensor=act.l6.m2.t0-32 bytes=4096 after=F.s2.m2.t0-32
op SB.s2.m1.t0-32 SEND dev=2 stream=send stage=2 mb=1 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m1.t0-32 bytes=4096 after=B.s2.m1.t0-32
op SF.s2.m3.t0-32 SEND dev=2 stream=send stage=2 mb=3 rows=1 tokens=0-32 peer=3 tensor=act.l6.m3.t0-32 bytes=4096 after=F.s2.m3.t0-32
op SB.s2.m2.t0-32 SEND dev=2 stream=send stage=2 mb=2 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m2.t0-32 bytes=4096 after=B.s2.m2.t0-32
op SF.s2.m4.t0-32 SEND dev=2 stream=send stage=2 mb=4 rows=1 tokens=0-32 peer=3 tensor=act.l6.m4.t0-32 bytes=4096 after=F.s2.m4.t0-32
op SB.s2.m3.t0-32 SEND dev=2 stream=send stage=2 mb=3 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m3.t0-32 bytes=4096 after=B.s2.m3.t0-32
op SF.s2.m5.t0-32 SEND dev=2 stream=send stage=2 mb=5 rows=1 tokens=0-32 peer=3 tensor=act.l6.m5.t0-32 bytes=4096 after=F.s2.m5.t0-32
op SB.s2.m4.t0-32 SEND dev=2 stream=send stage=2 mb=4 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m4.t0-32 bytes=4096 after=B.s2.m4.t0-32
op SF.s2.m6.t0-32 SEND dev=2 stream=send stage=2 mb=6 rows=1 tokens=0-32 peer=3 tensor=act.l6.m6.t0-32 bytes=4096 after=F.s2.m6.t0-32
op SB.s2.m5.t0-32 SEND dev=2 stream=send stage=2 mb=5 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m5.t0-32 bytes=4096 after=B.s2.m5.t0-32
op SF.s2.m7.t0-32 SEND dev=2 stream=send stage=2 mb=7 rows=1 tokens=0-32 peer=3 tensor=act.l6.m7.t0-32 bytes=4096 after=F.s2.m7.t0-32
op SB.s2.m6.t0-32 SEND dev=2 stream=send stage=2 mb=6 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m6.t0-32 bytes=4096 after=B.s2.m6.t0-32
op SB.s2.m7.t0-32 SEND dev=2 stream=send stage=2 mb=7 rows=1 tokens=0-32 peer=1 tensor=grad.l4.m7.t0-32 bytes=4096 after=B.s2.m7.t0-32
# device 3
op RF.s3.m0.t0-32 RECV dev=3 stream=recv stage=3 mb=0 rows=1 tokens=0-32 peer=2 tensor=act.l6.m0.t0-32 bytes=4096
op RF.s3.m1.t0-32 RECV dev=3 stream=recv stage=3 mb=1 rows=1 tokens=0-32 peer=2 tensor=act.l6.m1.t0-32 bytes=4096
op RF.s3.m2.t0-32 RECV dev=3 stream=recv stage=3 mb=2 rows=1 tokens=0-32 peer=2 tensor=act.l6.m2.t0-32 bytes=4096
op RF.s3.m3.t0-32 RECV dev=3 stream=recv stage=3 mb=3 rows=1 tokens=0-32 peer=2 tensor=act.l6.m3.t0-32 bytes=4096
op RF.s3.m4.t0-32 RECV dev=3 stream=recv stage=3 mb=4 rows=1 tokens=0-32 peer=2 tensor=act.l6.m4.t0-32 bytes=4096
op RF.s3.m5.t0-32 RECV dev=3 stream=recv stage=3 mb=5 rows=1 tokens=0-32 peer=2 tensor=act.l6.m5.t0-32 bytes=4096
op RF.s3.m6.t0-32 RECV dev=3 stream=recv stage=3 mb=6 rows=1 tokens=0-32 peer=2 tensor=act.l6.m6.t0-32 bytes=4096
op RF.s3.m7.t0-32 RECV dev=3 stream=recv stage=3 mb=7 rows=1 tokens=0-32 peer=2 tensor=act.l6.m7.t0-32 bytes=4096
op F.s3.m0.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=0 rows=1 tokens=0-32 after=RF.s3.m0.t0-32
op B.s3.m0.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=0 rows=1 tokens=0-32
op F.s3.m1.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=1 rows=1 tokens=0-32 after=RF.s3.m1.t0-32
op B.s3.m1.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=1 rows=1 tokens=0-32
op F.s3.m2.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=2 rows=1 tokens=0-32 after=RF.s3.m2.t0-32
op B.s3.m2.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=2 rows=1 tokens=0-32
op F.s3.m3.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=3 rows=1 tokens=0-32 after=RF.s3.m3.t0-32
op B.s3.m3.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=3 rows=1 tokens=0-32
op F.s3.m4.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=4 rows=1 tokens=0-32 after=RF.s3.m4.t0-32
op B.s3.m4.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=4 rows=1 tokens=0-32
op F.s3.m5.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=5 rows=1 tokens=0-32 after=RF.s3.m5.t0-32
op B.s3.m5.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=5 rows=1 tokens=0-32
op F.s3.m6.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=6 rows=1 tokens=0-32 after=RF.s3.m6.t0-32
op B.s3.m6.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=6 rows=1 tokens=0-32
op F.s3.m7.t0-32 FWD dev=3 stream=compute stage=3 layers=6-8 mb=7 rows=1 tokens=0-32 after=RF.s3.m7.t0-32
op B.s3.m7.t0-32 BWD dev=3 stream=compute stage=3 layers=6-8 mb=7 rows=1 tokens=0-32
op OPT.s3.d0 OPTIMIZER dev=3 stream=compute stage=3 layers=6-8
op SB.s3.m0.t0-32 SEND dev=3 stream=send stage=3 mb=0 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m0.t0-32 bytes=4096 after=B.s3.m0.t0-32
op SB.s3.m1.t0-32 SEND dev=3 stream=send stage=3 mb=1 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m1.t0-32 bytes=4096 after=B.s3.m1.t0-32
op SB.s3.m2.t0-32 SEND dev=3 stream=send stage=3 mb=2 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m2.t0-32 bytes=4096 after=B.s3.m2.t0-32
op SB.s3.m3.t0-32 SEND dev=3 stream=send stage=3 mb=3 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m3.t0-32 bytes=4096 after=B.s3.m3.t0-32
op SB.s3.m4.t0-32 SEND dev=3 stream=send stage=3 mb=4 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m4.t0-32 bytes=4096 after=B.s3.m4.t0-32
op SB.s3.m5.t0-32 SEND dev=3 stream=send stage=3 mb=5 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m5.t0-32 bytes=4096 after=B.s3.m5.t0-32
op SB.s3.m6.t0-32 SEND dev=3 stream=send stage=3 mb=6 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m6.t0-32 bytes=4096 after=B.s3.m6.t0-32
op SB.s3.m7.t0-32 SEND dev=3 stream=send stage=3 mb=7 rows=1 tokens=0-32 peer=2 tensor=grad.l6.m7.t0-32 bytes=4096 after=B.s3.m7.t0-32
